#pragma once
// Checking a reducer's CenteredClip result against the parts its group sent, without sending the
// parts to anyone else: the check of BTARD (Gorbunov et al. 2021, "Secure Distributed Training at
// Scale", arXiv 2106.11257) by random projections, made one-shot (docs/PROTOCOL.md "Checked
// results").
//
// The fixed point. For one aggregation block b of reducer j's shard (PartReducer.h), with sender
// i's part x_i as the reducer decoded it, its pull weight u_i (pullWeight of its counted weight
// and the block's total: RobustAggregation.h), the block's radius tau and the result v,
// CenteredClip (RobustAggregation.h) stops where
//     sum_i u_i c_i (x_i - v) = 0,     c_i = min(1, tau / ||x_i - v||),
// up to its stopping step and the result codec's error. Each member knows its own x_i, the v it
// received and (from the RESULT headers) tau, its counted weight and the block's total weight W,
// hence u_i; so it can compute its own term, but the sum needs everyone's. Projected on random
// sign vectors s_k (k < CheckProjections, elements +-1) the terms are K numbers each, member i's
// sketch
//     q_ik = sum_b u_ib c_ib <x_ib - v_b, s_bk>
// over the blocks of shard j in which it was counted; summed over the counted members, a true
// result gives sum_i q_i = 0 (within the allowance below), a result moved by delta about
// -P <delta, s_k>: some sqrt(K) P ||delta|| in all (P = sum_i u_i, while no member is clipped).
//
// The signs come from ChaCha20 keyed by the group's average digest (checkSeed): a reducer knows
// them only once its result is fixed, and to pass the check a moved result would need all K
// projections near 0 at once, each a fresh random draw per result it tries.
//
// Who says what. A member's q is its own word, and one liar in a sum of words could make any
// honest result look wrong. But the reducer holds every counted member's part, so it computes
// every member's sketch of its shard itself and publishes that view; each member publishes its
// own sketch of every other reducer's shard. The check then reads the reducer's view alone:
//   - its sum must vanish: ||sum_i q_i|| at most sqrt(ProjectionBound) x (the members' median
//     slack + CenteredClip's stopping step x W x tau), the slack sum_b W_b ||e_b|| bounding the
//     result codec's error e from the result received (resultErrorBound);
//   - each entry keeps within what it says of itself: spread sqrt(sum_b (u_b c_b n_b)^2), n_b =
//     ||x_b - v_b||, at most maxWeight (max_b u_b) x radius (c n <= tau), and ||q||^2 at most
//     ProjectionBound x spread^2 (an honest one's is about K spread^2: with K = 16, above 64 has a
//     chance below 1e-7);
//   - the radius it states, sqrt(sum_b tau_b^2), at most TauSlack x the manifest's radius x the
//     members' median sqrt(sum_b n_b^2) (a larger one would let it average without clipping),
//     and no block's radius so small that half its senders or more lie far from it (FarRadii:
//     each member lists such blocks; a tiny radius would clip everyone to nothing).
// An honest view equals each member's own sketch (the same numbers from the same bytes); a member
// whose own sketch differs disputes the view, and so does one that was told it was not counted or
// not clipped in a block it sent (a reducer cannot leave the honest members out of its view:
// ShardSketch::excluded and ::averaged). So a reducer that moved its result must either
// break its view's sum, or change the entries of the members (each a dispute), or only its own
// entry, which its bounds keep within sqrt(64) x its spread: a move of at most about
// sqrt(64) / sqrt(16) = 2 times what its own clipped part could move the result. Two or more
// disputes fail the reducer; a lone dispute cannot tell which of the two lies (either could be
// framing the other): the caller counts it against both, and the liar, in every dispute it
// makes, is banned first.
//
// Units: weights in samples, the rest in the values' own units. Threads: any; no state.
// Errors: none (sizes are the caller's; a member index beyond the entries' is the caller's).
#include "averaging/SketchRecord.h"
#include "compress/Compression.h"

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dedloc {

// sum_k q_k^2 <= ProjectionBound x spread^2 for a plausible member (see above).
inline constexpr double ProjectionBound = 64.0;
// A stated radius above TauSlack x radius x the median distance fails the reducer (see above).
inline constexpr double TauSlack = 3.0;
// A member lies far from a block's result when its distance exceeds FarRadii x the block's tau
// (any distance where tau is 0). In an honest CenteredClip more than half the senders lie within
// the median distance of the start, which the result stays within tau of (the steps are clipped
// means): at most 1.5 tau for the default radius of 2. So half the senders or more lying far from
// a block fail its reducer: a radius too small for the spread (0 above all, "every sender alike")
// would make the fixed point hold for any result.
inline constexpr double FarRadii = 4.0;

using CheckSeed = std::array<unsigned char, 32>;
// The seed of a group's sign vectors: its average's digest (updateDigest, 64 hex digits).
[[nodiscard]] CheckSeed checkSeed(std::string_view digest);

// Builds a member's sketch of one shard, block by block.
class SketchBuilder final {
  public:
    // `resultCodec`: the codec the results came in (their error bound: resultErrorBound).
    SketchBuilder(const CheckSeed &seed, std::uint32_t shard, Compression resultCodec);
    // Adds block `block` (its index in the shard): `sent` = this member's part as the reducer
    // decoded it, `result` = the average received (same length), `tau` = the block's radius,
    // `counted` = this member's weight as the reducer counted it, `total` = the block's total
    // weight. A block with tau < 0 (averaged, not clipped) or counted <= 0 adds nothing; one this
    // member lies far from is also listed in `far`.
    void addBlock(std::uint32_t block, std::span<const float> sent, std::span<const float> result, double tau,
                  double counted, double total);
    // Whether some block was added.
    [[nodiscard]] bool empty() const { return m_sketch.weight <= 0.0 && m_sketch.excluded <= 0.0 && m_sketch.far.empty(); }
    // The sums; a sketch whose sums are not finite (values near the float range) comes back empty
    // but for excluded = 1: such a round cannot be checked, and its member disputes it.
    [[nodiscard]] ShardSketch sketch() const;

  private:
    CheckSeed m_seed;
    Compression m_resultCodec;
    ShardSketch m_sketch;
    double m_spread2 = 0.0, m_radius2 = 0.0, m_distance2 = 0.0;
    std::vector<unsigned char> m_signs; // one block's sign bits, 2 bytes an element
};

// ||e|| bound for the error of `result` as decoded from `codec` (the round's result codec):
// fp32 2^-24 |v| (the reducer's double rounded once); fp16 and sparse fp16 2^-11 |v| + 2^-25 (half
// a step, the subnormal step below 2^-14); blockwise 8-bit its block's absmax / 254 (blocks of
// 4096 from the start: parts start on them). Uniform 8-bit's clipped tails have no bound: rounds
// in it are not checked (checksResults). Saturated fp16 values (65504) are not bounded either.
[[nodiscard]] double resultErrorBound(Compression codec, std::span<const float> result);

enum class CheckOutcome {
    Holds,     // the view sums to zero and no member disputes it
    Fails,     // the reducer's result or view is wrong (see above)
    Disputed,  // one member disputes an otherwise sound view: one of the two lies
    Undecided, // fewer than three members counted: nothing to check
};

struct ShardCheck {
    CheckOutcome outcome = CheckOutcome::Undecided;
    std::vector<std::size_t> disputes; // members whose own sketch differs from the view
    double sum = 0.0;                  // ||sum_i q_i|| of the view
    double allowance = 0.0;            // what the check allows it
    std::string reason;                // why it failed, or is disputed or undecided
};


// What the checker knows beside the sketches.
struct CheckScope {
    double radius = 2.0;       // the manifest's CenteredClip radius
    bool reducerSent = true;   // the reducer sent values itself (its record holds own sketches)
    bool allReported = true;   // every member that sent values has a record read: a lone dispute
                               // is one (else it may be one of several, and decides nothing)
    std::size_t senders = 0;   // members that sent values, the reducer included (0: those that
                               // report, from the own sketches given and reducerSent)
};

// Checks reducer `reducer`'s shard from its `view` (one entry per member it counted, its own
// included) and the members' `own` sketches of that shard (those that published one; a member
// whose record holds none has an entry of weight 0). Fails when two or more
// members dispute the view (a member with weight in its own sketch and no entry in the view, or
// with excluded blocks, disputes it too), when more than two senders (the reducer included when
// it sent) say blocks were averaged without clipping, and, where the view counts three members or more, when its
// weights do not add up to the total it stated or an entry, the radius or the sum is out of
// bounds; Disputed when exactly one member disputes an otherwise sound view and every sender
// reported; Undecided when the view counts fewer than three members and nothing else fails it, or
// for a lone dispute while some sender's record is missing.
[[nodiscard]] ShardCheck checkShard(std::span<const MemberSketch> view, std::span<const MemberSketch> own,
                                    std::size_t reducer, const CheckScope &scope);

} // namespace dedloc
