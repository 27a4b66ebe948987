#pragma once
// A round's sketches (averaging/ResultCheck.h) as the "c" field of a member's group record
// (averaging/SwarmMessages.h GroupRecord), in JSON:
//   {"o": [[shard, q_0 .. q_15, spread, weight, maxWeight, groupWeight, radius, distance, slack,
//           excluded, averaged, [far block, ...]], ...],
//    "v": [[member, q_0 .. q_15, spread, weight, maxWeight, groupWeight, radius, distance, slack], ...]}
// "o": this member's own sketch of each other reducer's shard; "v": its view of its own shard.
// Each list holds at most MaxCheckedMembers entries, each index below the group's size and named
// once; every number finite and, but the q's, non-negative. A group of 32 takes about 35 KB.
//
// Threads: any; no state. Errors: parseSketches throws ProtocolError (net/WireMessage.h) with
// the reason for anything else.
#include "averaging/ResultCheck.h"

#include <nlohmann/json.hpp>

namespace dedloc {

// Groups of more members do not check results (their sketches would outgrow a DHT record).
inline constexpr std::size_t MaxCheckedMembers = 32;

[[nodiscard]] nlohmann::json encodeSketches(const RoundSketches &sketches);
// `members`: the group's size (indices must be below it).
[[nodiscard]] RoundSketches parseSketches(const nlohmann::json &field, std::size_t members);

} // namespace dedloc
