#pragma once
// A round's sketches: what a member publishes for the result check (averaging/ResultCheck.h, which
// computes and judges them), and their wire form (part of the wire format, no algorithm): a
// CheckRecord of its own under checksKey(run, epoch, group), read only by the group's auditors
// (peer/ResultAuditor.h), never by the merge, whose group records stay small. The record, in JSON:
//   {"e": epoch, "g": group id, "n": the group's size, "h": the group average's digest (64 hex),
//    "c": sketches, "p": true (optional: a partial record, its view alone)}
// and the sketches:
//   {"o": [[shard, q_0 .. q_15, spread, weight, maxWeight, groupWeight, radius, distance, slack,
//           excluded, averaged, [far block, ...]], ...],
//    "v": [[member, q_0 .. q_15, spread, weight, maxWeight, groupWeight, radius, distance, slack], ...]}
// "o": this member's own sketch of each other reducer's shard; "v": its view of its own shard.
// Each list holds at most MaxCheckedMembers entries, each index below the group's size and named
// once; every number finite and, but the q's, non-negative, written with 9 significant digits
// (ResultCheck.h compares sketches to a relative 1e-6). A group of 32 takes about 17 KB.
//
// Threads: any; no state. Errors: parseSketches throws ProtocolError (net/WireMessage.h) with
// the reason for anything else.
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dedloc {

// Random-sign projections per sketch (averaging/ResultCheck.h: K).
inline constexpr std::size_t CheckProjections = 16;

// What one member publishes about one reducer's shard: sums over the shard's blocks in which the
// reducer counted it (u > 0) and clipped (tau >= 0).
struct ShardSketch {
    std::uint32_t shard = 0;                         // the reducer's member index
    std::array<double, CheckProjections> residual{}; // q_k (ResultCheck.h)
    double spread = 0.0;      // sqrt(sum_b (u_b c_b n_b)^2), u_b the pull weight (ResultCheck.h)
    double weight = 0.0;      // sum_b w_b, the samples the reducer counted (u_b = pullWeight(w_b, W_b))
    double maxWeight = 0.0;   // max_b u_b: the pull weights, which bound the spread
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

// One member's sketches of its group's round, as published under checksKey (above).
struct CheckRecord {
    std::string peerId;      // its signer (from the verified DHT record), not on the wire
    long epoch = 0;
    std::string groupId;     // 1 to 64 bytes
    std::size_t members = 0; // the group's size, 2 to MaxCheckedMembers
    std::string digest;      // the group average whose digest seeds the signs (64 hex digits)
    RoundSketches sketches;  // may be empty: the member reports that it sketched nothing
    // "p": its view alone, no own sketches: the member's round was incomplete (a result lost or
    // late is no evidence against its reducer), so it reports on no other reducer.
    bool partial = false;
    bool operator==(const CheckRecord &) const = default;
};
[[nodiscard]] std::string encodeCheckRecord(const CheckRecord &record);
// `peerId`: the verified signer's. Checks every field (ProtocolError, net/WireMessage.h).
[[nodiscard]] CheckRecord parseCheckRecord(const std::string &peerId, const std::string &payload);

// The DHT key of the check records of group `groupId`'s round at `epoch`: "checks/ring/<r>/<s>"
// under the run, r the epoch modulo CheckKeyRing and s one of CheckKeySlots slots (the group
// id's SHA-256 modulo CheckKeySlots), so a node touches at most 1 024 such keys (OpenDHT keeps
// each an hour after its last use: SwarmMessages.h EpochKeyRing) and a reader gets the records of
// its own group and of about 1/16 of the others. Records of epoch e + CheckKeyRing replace those of e (one value
// per peer and key), long after their audit.
inline constexpr long CheckKeyRing = 64;
inline constexpr unsigned CheckKeySlots = 16;
[[nodiscard]] std::string checksKey(const std::string &runId, long epoch, const std::string &groupId);

} // namespace dedloc
