#pragma once
// Whether the swarm vouches for a donor's state before a joiner takes it (docs/PROTOCOL.md
// "Verified state"; in the spirit of BTARD's checks of what peers computed, Gorbunov et al. 2021,
// arXiv 2106.11257).
// Every peer that serves state signs, in its progress record, the epoch and SHA-256 of the state
// it serves (ProgressRecord::stateEpoch, stateDigest). The members of one group hold bit-identical
// states after a step, so an honest donor's (epoch, digest) is also claimed by the other members
// of its group; a stranger serving finite garbage at a plausible epoch is claimed by nobody else.
// A state is vouched for when:
//   - at least `needed` (2) live records other than the joiner's claim its (epoch, digest), the
//     donor's own included (two colluding peers can still vouch for each other: the bound of
//     this rule); or
//   - the donor is the only live trainer that serves a state and its own record claims it (a
//     swarm of one trainer has nobody to agree with; monitors' states lag behind the trainers').
// Pure logic on records the caller keeps (ProgressTracker::liveRecords); no I/O.
#include "averaging/SwarmMessages.h"

#include <string>
#include <vector>

namespace dedloc {

// "" when `live` vouches for the state (`epoch`, `digest`) that `donorId` offers to `selfId`;
// otherwise why not, for the log ("state of epoch 7 (3f2a9c01...) is claimed by 1 peer; 2 needed").
[[nodiscard]] std::string whyStateNotVouched(const std::vector<ProgressRecord> &live, const std::string &selfId,
                                             const std::string &donorId, long epoch, const std::string &digest,
                                             int needed = 2);

} // namespace dedloc
