#include "averaging/StateVouching.h"

namespace dedloc {

std::string whyStateNotVouched(const std::vector<ProgressRecord> &live, const std::string &selfId,
                               const std::string &donorId, long epoch, const std::string &digest, int needed)
{
    int claims = 0;
    int stateTrainers = 0; // live trainers other than the joiner that serve a state
    bool donorClaims = false;
    bool donorTrains = false;
    for (const auto &r : live) {
        if (r.peerId == selfId || r.stateDigest.empty())
            continue;
        const bool claimsIt = r.stateEpoch == epoch && r.stateDigest == digest;
        claims += claimsIt ? 1 : 0;
        if (r.role == PeerRole::Trainer)
            ++stateTrainers;
        if (r.peerId == donorId) {
            donorClaims = claimsIt;
            donorTrains = r.role == PeerRole::Trainer;
        }
    }
    if (claims >= needed)
        return {};
    if (donorClaims && donorTrains && stateTrainers == 1)
        return {};
    std::string why = "state of epoch " + std::to_string(epoch) + " (" + digest.substr(0, 8) + "...) is claimed by "
                      + std::to_string(claims) + " peer(s)";
    if (!donorClaims)
        why += ", not by the donor's own record";
    return why + "; " + std::to_string(needed) + " needed";
}

} // namespace dedloc
