#include "averaging/ModelAgreement.h"

#include <map>

namespace dedloc {

int stateClaimsAt(const std::vector<ProgressRecord> &live, const std::string &selfId, long epoch)
{
    int n = 0;
    for (const auto &r : live)
        n += r.peerId != selfId && r.stateEpoch == epoch && !r.stateDigest.empty() ? 1 : 0;
    return n;
}

std::optional<StrayedState> strayedFromSwarm(const std::vector<ProgressRecord> &live, const std::string &selfId,
                                             long epoch, const std::string &ownDigest)
{
    std::map<std::string, int> claims; // digest -> peers (ordered: ties go to the smaller)
    for (const auto &r : live)
        if (r.peerId != selfId && r.stateEpoch == epoch && !r.stateDigest.empty())
            ++claims[r.stateDigest];
    ++claims[ownDigest];
    auto best = claims.begin();
    for (auto it = claims.begin(); it != claims.end(); ++it)
        if (it->second > best->second)
            best = it;
    if (best->first == ownDigest || best->second < 2)
        return std::nullopt;
    return StrayedState{best->first, best->second, claims[ownDigest]};
}

} // namespace dedloc
