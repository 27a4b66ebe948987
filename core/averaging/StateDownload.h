#pragma once
// Downloading the training state from a state donor (docs/PROTOCOL.md "State sharing").
//
// Donors advertise {service endpoint, epoch} under runKey(run, "donors"). A joiner or a peer
// that fell behind picks the donors whose epoch is at least `minEpoch` (never one behind
// itself), highest epoch first, ties in random order (so simultaneous joiners spread over the
// donors), and pulls the state part by part over the donor's service socket: "state?" gives the
// snapshot's epoch and layout, then each "part?" returns at most partElements fp32 values.
// The layout is checked against `expectedElements` before anything is allocated, and a
// download times out on lack of progress (`partTimeout` per part), not on total time. A donor
// that fails is skipped and the next one tried; when the next offers the same snapshot digest
// (SHA-256 of the values, StateInfo::digest: the same state), the download goes on with the parts
// already fetched instead of from the start, and the assembled state is checked against the
// digest (a mismatch is the offence of the donor that served it all). Donors of one state may
// also serve one download together (downloadState below).
// Security: the download runs over CURVE to the key that signed the donor's advert; in a closed
// run donors whose access token this peer has not verified are skipped.
//
// Threads: runs on the calling thread (a download from several donors uses one more thread per
// donor, joined before it returns); returns within about (donors tried) x partTimeout after
// progress stops, or soon after `stop` becomes true.
#include "net/DhtNode.h"
#include "averaging/PeerService.h"

#include <atomic>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dedloc {

class DataPlaneSecurity;

struct StateDownloadOptions {
    double partTimeout = 10.0;   // seconds without progress before a donor is given up
    int maxDonors = 3;           // donors tried before giving up
    // The highest epoch believed (the swarm's corroborated epoch plus a margin for the steps it
    // takes meanwhile): a donor advertising or answering a later one is skipped, so that one
    // stranger's claim of a far epoch cannot make itself the first donor everyone asks.
    long maxEpoch = std::numeric_limits<long>::max();
    // When set: asked (donor's peer id, epoch, digest) once a donor has said what it offers,
    // before any part is fetched; a non-empty answer says why that state is not taken
    // (averaging/StateVouching.h), and the donor is skipped without a strike.
    std::function<std::string(const std::string &donorId, long epoch, const std::string &digest)> vouch;
};

// Donor adverts from the DHT, newest per peer, excluding `selfPeerId`.
[[nodiscard]] std::vector<DonorAdvert> fetchDonors(DhtNode &dht, const std::string &runId,
                                                   const std::string &selfPeerId);

// The order in which to try donors: minEpoch <= epoch <= maxEpoch, highest first, ties shuffled.
[[nodiscard]] std::vector<DonorAdvert> rankDonors(std::vector<DonorAdvert> donors, long minEpoch,
                                                  long maxEpoch = std::numeric_limits<long>::max());

// Downloads a whole, valid state: the first `maxDonors` donors are asked what they offer, and
// when two or more of them offer the same (epoch, digest), the state they vouch for is fetched
// from all of them at once (each takes the next part nobody has: the download runs at the sum of
// their upload rates, and a donor that fails leaves its parts to the others;
// averaging/DonorDownload.h). Otherwise, or if that fails, donors are tried one at a time: those
// whose state another asked donor offers first, then the rest as ranked, going on from the parts
// already fetched when a donor offers the same state; one that offered nothing is not asked
// again. A state assembled from several donors that does not match its digest strikes nobody (who
// lied cannot be told) and is fetched again from one donor at a time.
// `security` null: plaintext (unit tests only). `bans` (may be null): banned donors are skipped,
// and a donor whose answer is invalid (another layout, a part of the wrong size, non-finite
// values) gets a strike; one that is slow, refuses or is behind does not.
std::optional<StateSnapshot> downloadState(const std::vector<DonorAdvert> &rankedDonors, const std::string &runId,
                                           long minEpoch, std::uint64_t expectedElements,
                                           const StateDownloadOptions &options, const std::atomic<bool> &stop,
                                           std::string *why = nullptr,
                                           const std::shared_ptr<const DataPlaneSecurity> &security = nullptr,
                                           BanList *bans = nullptr);

} // namespace dedloc
