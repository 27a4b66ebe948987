#pragma once
// How a reducer combines the senders' copies of one part of its shard (averaging/PartReducer.h):
// the weighted mean of DeDLOC, or BTARD's CenteredClip, which bounds what any one sender can move
// the result by, whatever values it sends (Gorbunov et al. 2021, "Secure Distributed Training at
// Scale", arXiv 2106.11257, Algorithm 2; docs/PROTOCOL.md "Robust aggregation").
//
// Inputs: m senders' pieces xs[i] (each `out.size()` floats) with weights ws[i] >= 0 (samples).
//
// Mean:          out = sum_i w_i x_i / sum_i w_i, summed in the order given; every w_i = 0: the
//                plain mean.
// CenteredClip:  over the senders with w_i > 0 (weight-0 senders send no values: their zeros must
//                not pull the centre), starting from the coordinate-wise median v_0,
//                    tau     = radius * median_i ||x_i - v_0||
//                    v_{t+1} = v_t + sum_i p_i c_i (x_i - v_t) / sum_i p_i,
//                    c_i     = min(1, tau / ||x_i - v_t||),
//                    p_i     = min(w_i, HeavyShare * (W - w_i))   (pullWeight; W = sum_i w_i)
//                until the step is below 1e-6 tau or after 200 iterations. A sender whose values are
//                within tau of the centre counts fully, so with honest senders alone the result is
//                close to the weighted mean; a sender far away moves the result by at most
//                p_i tau / sum_j p_j. Starting from the median (not the mean, as BTARD does) lets
//                a few iterations suffice against values scaled by 1e3 or more. With one or two
//                such senders there is no majority to defend: the weighted mean.
//                BTARD weighs its senders alike. Weighted by samples, one sender holding more than
//                the others together (a fast GPU beside two laptops) would outpull all of them
//                while far: the centre drifts towards it by a share of tau at every step, never
//                settles within the 200, and the others end far from the result (where the result
//                check, ResultCheck.h, fails the honest reducer). Pulling with at most HeavyShare of
//                the others' weight, no sender outweighs the rest: the others stay within about
//                tau of the result, whatever one sender sends. The price: such a sender counts as
//                HeavyShare x the others' weight in the average, not its own.
//
// Outliers: sender i is an outlier when ||x_i - v_0|| sqrt(w_i) exceeds OutlierRatio times the
// median over senders of the same (a mean over w samples deviates by about 1/sqrt(w): a sender
// with few samples is allowed a wider spread). The reducer reports its verdicts
// (AllReduceReport::clipVerdicts); the peer strikes a persistent outlier (averaging/OutlierRecord.h).
//
// Units: none (the values' own). Threads: any; no state. Errors: none (sizes are the caller's).
#include "run/RunManifest.h"

#include <span>
#include <vector>

namespace dedloc {

// Normalised distance from the median above which a sender counts as an outlier (see above).
inline constexpr double OutlierRatio = 16.0;
// The most a sender pulls CenteredClip's centre with, as a share of the other senders' total
// weight (see above). Below 1, so that the others always outpull it.
inline constexpr double HeavyShare = 0.9;

// p = min(weight, HeavyShare x (total - weight)): the weight a sender of `weight` samples pulls
// CenteredClip's centre with in a block whose weighted senders hold `total` (see above).
[[nodiscard]] double pullWeight(double weight, double total);

// What CenteredClip saw of each sender (indices as in xs).
struct SenderFit {
    double clip = 1.0;     // c_i at the end: 1 when the sender counted fully
    bool outlier = false;  // far from the others (see above)
    bool judged = false;   // CenteredClip weighed it (w_i > 0 and three or more such senders)
};

// Writes the aggregate of the m pieces xs to out under `spec`; returns sum_i w_i, or 0 when every
// weight was 0 (then the plain mean). `fits`, when given, is resized to m; `radius`, when given,
// receives CenteredClip's tau (>= 0; 0 where more than half the weighted senders sent the same
// values: the result is theirs), or -1 when the weighted mean was taken.
double aggregateParts(const AggregationSpec &spec, const std::vector<const float *> &xs, std::vector<double> ws,
                      std::span<float> out, std::vector<SenderFit> *fits = nullptr, double *radius = nullptr);

} // namespace dedloc
