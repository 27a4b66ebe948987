#pragma once
// A round's sketches: what a member publishes for the result check (averaging/ResultCheck.h, which
// computes and judges them), and their wire form, the "c" field of a member's group record
// (averaging/SwarmMessages.h GroupRecord; part of the wire format, no algorithm), in JSON:
//   {"o": [[shard, q_0 .. q_15, spread, weight, maxWeight, groupWeight, radius, distance, slack,
//           excluded, averaged, [far block, ...]], ...],
//    "v": [[member, q_0 .. q_15, spread, weight, maxWeight, groupWeight, radius, distance, slack], ...]}
// "o": this member's own sketch of each other reducer's shard; "v": its view of its own shard.
// Each list holds at most MaxCheckedMembers entries, each index below the group's size and named
// once; every number finite and, but the q's, non-negative. A group of 32 takes about 35 KB.
//
// Threads: any; no state. Errors: parseSketches throws ProtocolError (net/WireMessage.h) with
// the reason for anything else.
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace dedloc {

// Random-sign projections per sketch (averaging/ResultCheck.h: K).
inline constexpr std::size_t CheckProjections = 16;

// What one member publishes about one reducer's shard: sums over the shard's blocks in which the
// reducer counted it (u > 0) and clipped (tau >= 0).
struct ShardSketch {
    std::uint32_t shard = 0;                         // the reducer's member index
    std::array<double, CheckProjections> residual{}; // q_k (ResultCheck.h)
    double spread = 0.0;      // sqrt(sum_b (u_b c_b n_b)^2)
    double weight = 0.0;      // sum_b u_b
    double maxWeight = 0.0;   // max_b u_b
    double groupWeight = 0.0; // sum_b W_b, as the RESULT headers said
    double radius = 0.0;      // sqrt(sum_b tau_b^2), as the RESULT headers said
    double distance = 0.0;    // sqrt(sum_b n_b^2)
    double slack = 0.0;       // sum_b W_b ||e_b||: the result codec's error allowed (ResultCheck.h)
    // Own sketches only. Blocks in which this member sent values and got RESULTs that say it was
    // not counted (or whose parts' headers disagree, or whose sums overflow): only a sender silent
    // for the sender timeout is left out, so a member's own sketch with any disputes the view.
    double excluded = 0.0;
    // Blocks in which it was counted and the RESULTs say the block was averaged without clipping:
    // a reducer does that only where fewer than three senders were counted, so more than two
    // members saying so of one shard fail its reducer.
    double averaged = 0.0;
    // Own sketches only: the blocks (indices in the shard, increasing) in which it was counted and
    // lay far from the result (ResultCheck.h FarRadii); they are in the sums as any other.
    std::vector<std::uint32_t> far;
    bool operator==(const ShardSketch &) const = default;
};

// One member's sketch of a shard, with its index in the group.
struct MemberSketch {
    std::size_t member = 0;
    ShardSketch sketch;
    bool operator==(const MemberSketch &) const = default;
};

// This member's sketches of one round (RoundEvidence.h).
struct RoundSketches {
    // Of every other reducer's shard in which this member sent values and got results: its own
    // sketch (weight 0 when no block of it was counted and clipped).
    std::vector<ShardSketch> own;
    // Of its own shard: one entry per member it counted in a clipped block (empty: none).
    std::vector<MemberSketch> view;
    [[nodiscard]] bool empty() const { return own.empty() && view.empty(); }
    bool operator==(const RoundSketches &) const = default;
};

// Groups of more members do not check results (their sketches would outgrow a DHT record).
inline constexpr std::size_t MaxCheckedMembers = 32;

[[nodiscard]] nlohmann::json encodeSketches(const RoundSketches &sketches);
// `members`: the group's size (indices must be below it).
[[nodiscard]] RoundSketches parseSketches(const nlohmann::json &field, std::size_t members);

} // namespace dedloc
