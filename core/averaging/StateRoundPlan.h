#pragma once
// Who sends what in a group's state round (docs/PROTOCOL.md "State sharing"): the round after
// the gradients' in which the members average parameters and LAMB statistics, uncompressed.
//
// - Periodic (nobody in the group asked for repair): every trainer sends its state with weight
//   1, so the result is the mean of the trainers' copies; members that do not train send weight
//   0 and only receive.
// - Repair (some member asked: its parameters may differ from the swarm's, GroupMember::repair):
//   a copy. The source is the trainer that did not ask (it holds the swarm's state) with the
//   largest bandwidth, ties to the lower index; it alone sends weight 1, every other member
//   sends weight 0 (PARTs without values, averaging/PartSender.h) and takes the source's state.
//   The repaired member pays only its downlink, the others' uplinks nothing, and the result is
//   the source's state bit for bit (a weighted mean with one weight).
// - Repair with no such trainer (every trainer asked, e.g. after a reducer died mid-round and
//   each kept its own values for that shard): a copy as well, from the trainer with the largest
//   bandwidth. Any one of the differing states will do to make the group agree, and a copy costs
//   the slow uplinks nothing where a mean would make each upload its whole state.
//
// Every member computes the same plan from the leader's BEGIN (the member list, in its order).
// Threads: pure functions.
#include "averaging/SwarmMessages.h"

#include <cstddef>
#include <optional>
#include <vector>

namespace dedloc {

struct StateRoundPlan {
    std::optional<std::size_t> source; // a repair round: the member whose state everyone takes
    bool freshTrainer = false;         // a listed trainer (weight > 0) did not ask for repair
    double myWeight = 0.0;             // this member's weight in the round: 1 or 0
};

// `me` indexes `members`; `iTrain`: this member holds trained state (a trainer, not a monitor
// or an auxiliary, whose state vector is zeros). Throws nothing; `me` out of range gives weight 0.
[[nodiscard]] StateRoundPlan planStateRound(const std::vector<GroupMember> &members, std::size_t me, bool iTrain);

} // namespace dedloc
