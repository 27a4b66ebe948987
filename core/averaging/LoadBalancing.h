#pragma once
// Shard sizes of the butterfly all-reduce (DeDLOC, Diskin et al. 2021, section 3.2 and appendix;
// docs/PROTOCOL.md "Butterfly all-reduce data plane").
//
// A group of n peers averages a vector of `elements` floats. Peer i reduces a contiguous shard
// holding a fraction w_i of it: it sends the (1 - w_i) it does not own, receives its shard from
// the n - 1 others and returns the average to them, so its time is proportional to
//     t_i = (1 + (n - 2) w_i) / b_i,           b_i = peer i's bandwidth (any unit, e.g. bytes/s).
// We minimise max_i t_i subject to sum w_i = 1, 0 <= w_i <= 1. For n >= 3 the optimum fills
// peers up to a common "water level" T: w_i = clamp((T b_i - 1) / (n - 2), 0, 1) with T chosen
// so that the fractions sum to 1 (found by bisection on T; the sum is monotone in T). For n = 2
// every split costs the same; we split in proportion to bandwidth. For n = 1 the peer owns all.
//
// Then: fractions are scaled to element counts; a shard below `minShardElements` is given to the
// others (zero), the remaining shards scaled up in proportion; counts are rounded by largest
// remainders so they sum to `elements` exactly.
//
// Bandwidth conventions: a negative or non-finite value means unknown and is replaced by the mean
// of the known positive ones (none known: equal shards); 0 means the peer reduces nothing (client
// mode) and does not count as a known bandwidth; a claim above MaxDeclaredBandwidth is clipped to
// it, so that no declared figure can break the arithmetic (overflow, NaN, a remainder loop that
// never ends). A clipped claim still takes a large share (the whole vector against claims n - 1
// times smaller). So open runs also cap every fraction at `maxFraction` = fairShareCap(r), twice
// an even share of the r members that reduce (w_i <= min(1, 2 / r); the water level above is
// then found with the clamp at maxFraction instead of 1): a member that lies about its bandwidth
// reduces, and so decides the result of, at most two r-ths of the vector, and an honest fast
// member in a group of slow ones gives up some speed for it. Closed runs keep the exact optimum.
// Reference cases (hivemind's tests): 60 elements, [0.55, 0.44, 0.40], min 10 -> [41, 19, 0];
// [0.32, 0.55, 0.44] -> [0, 40, 20]; 100 elements, two unknown -> [50, 50].
// Pure function; throws dedloc::Error when no peer can reduce (all bandwidths 0) or n == 0.
//
// Shares: a group's leader turns the bandwidths into integer shares summing to a total S
// (shardShares; the swarm's S is ShardShareTotal, averaging/SwarmMessages.h) and sends them in
// its BEGIN; every member turns them into element counts for each
// vector the group averages with integer arithmetic only (shardsFromShares): floor(E s_i / S),
// then the E - sum floors missing elements go one each to the largest remainders (E s_i mod S),
// ties to the lower index. Every member therefore lays out identical shards, whatever its
// floating point; shares computed independently by each member could differ in one element, and
// then every part of the round is refused.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dedloc {

// The largest bandwidth a member's claim counts for (Mbit/s, the unit of `dedloc --bandwidth`:
// 100 Gbit/s).
inline constexpr double MaxDeclaredBandwidth = 100000.0;

// Twice an even share of `reducers` members (1 for two or fewer); at least 1 / reducers.
[[nodiscard]] double fairShareCap(std::size_t reducers);

[[nodiscard]] std::vector<std::int64_t> balanceShards(std::int64_t elements, const std::vector<double> &bandwidths,
                                                      std::int64_t minShardElements = 0, double maxFraction = 1.0);

// Integer shares of the members, summing to `total` (balanceShards of `total` elements). With
// `capped`, no fraction above fairShareCap of the members whose bandwidth is not 0.
[[nodiscard]] std::vector<std::int64_t> shardShares(const std::vector<double> &bandwidths, std::int64_t total,
                                                    bool capped = false);

// Element counts summing to `elements` from shares (each >= 0, sum > 0). Throws dedloc::Error
// for a negative share, a zero sum or a negative element count.
[[nodiscard]] std::vector<std::int64_t> shardsFromShares(std::int64_t elements, const std::vector<std::int64_t> &shares);

// The optimal fractions w_i before rounding and the minimum-size rule (exposed for tests).
[[nodiscard]] std::vector<double> optimalFractions(const std::vector<double> &bandwidths, double maxFraction = 1.0);

} // namespace dedloc
