#pragma once
// Whether this peer still holds the swarm's model after a step (docs/PROTOCOL.md "Merging
// groups": a group that some peers merged and others missed, a round that ended incomplete).
// Every state donor signs in its progress record the epoch and SHA-256 of the state it holds
// (ProgressRecord::stateEpoch, stateDigest; averaging/StateVouching.h). Among the live records
// other than this peer's that claim a state at `epoch`, and this peer's own state, the swarm's
// state is the digest claimed most often (ties: the smaller digest, so that exactly one side of
// an even split gives way). A peer whose own digest is not that one, while at least two records
// claim the other, has strayed: it downloads the swarm's state (only one vouched for by that
// digest) instead of training on.
// Pure logic on records the caller keeps (ProgressTracker::liveRecords); no I/O.
#include "averaging/SwarmMessages.h"

#include <optional>
#include <string>
#include <vector>

namespace dedloc {

struct StrayedState {
    std::string swarmDigest;  // the state most peers hold at the epoch
    int claimants = 0;        // records claiming it
    int withMine = 0;         // peers holding this peer's state, this one included
};

[[nodiscard]] std::optional<StrayedState> strayedFromSwarm(const std::vector<ProgressRecord> &live,
                                                           const std::string &selfId, long epoch,
                                                           const std::string &ownDigest);

// Records other than `selfId`'s that claim a state at `epoch` (whatever its digest).
[[nodiscard]] int stateClaimsAt(const std::vector<ProgressRecord> &live, const std::string &selfId, long epoch);

} // namespace dedloc
