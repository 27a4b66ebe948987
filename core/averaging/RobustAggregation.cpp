#include "averaging/RobustAggregation.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace dedloc {

namespace {

constexpr int MaxIterations = 200;
constexpr double StopFraction = 1e-6; // of tau

double weightedMean(const std::vector<const float *> &xs, std::vector<double> ws, std::span<float> out)
{
    double total = 0.0;
    for (double w : ws)
        total += w;
    // Every sender with weight 0 (nobody accumulated anything): a plain mean, so that the
    // members still end equal and nobody waits for a result that never comes.
    const bool equalWeights = total <= 0.0;
    if (equalWeights) {
        std::fill(ws.begin(), ws.end(), 1.0);
        total = static_cast<double>(ws.size());
    }
    for (double &w : ws)
        w /= total;
    for (std::size_t k = 0; k < out.size(); ++k) {
        double acc = 0.0;
        for (std::size_t j = 0; j < xs.size(); ++j)
            acc += ws[j] * static_cast<double>(xs[j][k]);
        out[k] = static_cast<float>(acc);
    }
    return equalWeights ? 0.0 : total;
}

// The median of `v` (the mean of the two middle values for an even count); v is reordered.
double median(std::vector<double> &v)
{
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    if (v.size() % 2 == 1)
        return *mid;
    return 0.5 * (*mid + *std::max_element(v.begin(), mid));
}

std::vector<double> coordinateMedian(const std::vector<const float *> &xs, std::size_t n)
{
    std::vector<double> v(n), column(xs.size());
    for (std::size_t k = 0; k < n; ++k) {
        for (std::size_t i = 0; i < xs.size(); ++i)
            column[i] = xs[i][k];
        v[k] = median(column);
    }
    return v;
}

double distance(const float *x, const std::vector<double> &v)
{
    double sum = 0.0;
    for (std::size_t k = 0; k < v.size(); ++k) {
        const double d = static_cast<double>(x[k]) - v[k];
        sum += d * d;
    }
    return std::sqrt(sum);
}

double clipFactor(double dist, double tau) { return dist <= tau ? 1.0 : tau / dist; }

// One CenteredClip iteration: moves v; returns the length of the move.
double clipStep(const std::vector<const float *> &xs, const std::vector<double> &ws, double total, double tau,
                std::vector<double> &v, std::vector<double> &coef)
{
    for (std::size_t i = 0; i < xs.size(); ++i)
        coef[i] = ws[i] * clipFactor(distance(xs[i], v), tau) / total;
    double moved = 0.0;
    for (std::size_t k = 0; k < v.size(); ++k) {
        double delta = 0.0;
        for (std::size_t i = 0; i < xs.size(); ++i)
            delta += coef[i] * (static_cast<double>(xs[i][k]) - v[k]);
        v[k] += delta;
        moved += delta * delta;
    }
    return std::sqrt(moved);
}

// CenteredClip over senders that all have w > 0 (at least three); fills fits in their order and
// returns tau.
double centeredClip(double radius, const std::vector<const float *> &xs, const std::vector<double> &ws, double total,
                  std::span<float> out, std::vector<SenderFit> &fits)
{
    auto v = coordinateMedian(xs, out.size());
    std::vector<double> dist(xs.size()), spread(xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) {
        dist[i] = distance(xs[i], v);
        spread[i] = dist[i] * std::sqrt(ws[i]);
    }
    auto sorted = dist;
    const double tau = radius * median(sorted);
    sorted = spread;
    const double typicalSpread = median(sorted);
    std::vector<double> pulls(xs.size());
    double pulled = 0.0;
    for (std::size_t i = 0; i < xs.size(); ++i)
        pulled += pulls[i] = pullWeight(ws[i], total);
    std::vector<double> coef(xs.size());
    for (int t = 0; t < MaxIterations && tau > 0.0; ++t)
        if (clipStep(xs, pulls, pulled, tau, v, coef) <= StopFraction * tau)
            break;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        fits[i].clip = tau > 0.0 ? clipFactor(distance(xs[i], v), tau) : (dist[i] > 0.0 ? 0.0 : 1.0);
        fits[i].outlier = typicalSpread > 0.0 && spread[i] > OutlierRatio * typicalSpread;
        fits[i].judged = true;
    }
    for (std::size_t k = 0; k < out.size(); ++k)
        out[k] = static_cast<float>(v[k]);
    return tau;
}

} // namespace

double pullWeight(double weight, double total) { return std::min(weight, HeavyShare * (total - weight)); }

double aggregateParts(const AggregationSpec &spec, const std::vector<const float *> &xs, std::vector<double> ws,
                      std::span<float> out, std::vector<SenderFit> *fits, double *radius)
{
    if (radius)
        *radius = -1.0;
    std::vector<SenderFit> local;
    auto &f = fits ? *fits : local;
    f.assign(xs.size(), SenderFit{});
    std::vector<const float *> senders;
    std::vector<double> weights;
    std::vector<std::size_t> index;
    double total = 0.0;
    for (std::size_t i = 0; i < xs.size(); ++i)
        if (ws[i] > 0.0) {
            senders.push_back(xs[i]);
            weights.push_back(ws[i]);
            index.push_back(i);
            total += ws[i];
        }
    if (spec.rule != AggregationRule::CenteredClip || senders.size() < 3)
        return weightedMean(xs, std::move(ws), out);
    std::vector<SenderFit> clipped(senders.size());
    const double tau = centeredClip(spec.radius, senders, weights, total, out, clipped);
    if (radius)
        *radius = tau;
    for (std::size_t j = 0; j < index.size(); ++j)
        f[index[j]] = clipped[j];
    return total;
}

} // namespace dedloc
