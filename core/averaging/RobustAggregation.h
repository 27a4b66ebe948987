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
//                    v_{t+1} = v_t + sum_i w_i c_i (x_i - v_t) / sum_i w_i,
//                    c_i     = min(1, tau / ||x_i - v_t||)
//                until the step is below 1e-6 tau or after 200 iterations. A sender whose values are
//                within tau of the centre counts fully, so with honest senders alone the result is
//                close to the weighted mean; a sender far away moves the result by at most
//                w_i tau / sum_j w_j. Starting from the median (not the mean, as BTARD does) lets
//                a few iterations suffice against values scaled by 1e3 or more. With one or two
//                such senders there is no majority to defend: the weighted mean.
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
