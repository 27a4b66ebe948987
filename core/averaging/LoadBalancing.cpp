#include "averaging/LoadBalancing.h"

#include "util/Error.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dedloc {

namespace {

std::vector<double> resolveUnknown(const std::vector<double> &bandwidths)
{
    double sum = 0.0;
    int known = 0;
    // 0 marks a peer that reduces nothing (client mode), not a measured bandwidth: it must not
    // pull the unknown peers' estimate down to 0.
    std::vector<double> out = bandwidths;
    for (double &b : out) {
        b = std::isfinite(b) ? std::min(b, MaxDeclaredBandwidth) : -1.0;
        if (b > 0.0) {
            sum += b;
            ++known;
        }
    }
    const double fill = known > 0 ? sum / known : 1.0;
    for (double &b : out)
        if (b < 0.0)
            b = fill;
    return out;
}

} // namespace

double fairShareCap(std::size_t reducers) { return reducers <= 2 ? 1.0 : 2.0 / static_cast<double>(reducers); }

std::vector<double> optimalFractions(const std::vector<double> &input, double maxFraction)
{
    const std::size_t n = input.size();
    if (n == 0)
        throw Error("load balancing needs at least one peer");
    const auto b = resolveUnknown(input);
    const double total = std::accumulate(b.begin(), b.end(), 0.0);
    if (!(total > 0.0))
        throw Error("no peer in the group can reduce a shard (every bandwidth is 0: all in client mode)");
    std::vector<double> w(n, 0.0);
    const auto reducers = static_cast<std::size_t>(std::count_if(b.begin(), b.end(), [](double x) { return x > 0.0; }));
    // A cap below an even share could not cover the vector; NaN or above 1 is no cap.
    const double even = 1.0 / static_cast<double>(reducers);
    const double cap = std::isfinite(maxFraction) ? std::clamp(maxFraction, even, 1.0) : 1.0;
    if (n <= 2 && cap >= 1.0) {
        for (std::size_t i = 0; i < n; ++i)
            w[i] = b[i] / total;
        return w;
    }
    // Two members under a cap (one of them reduces nothing, else the cap is 1): the same level
    // rule with k = 1, which splits in proportion up to the cap.
    const double k = static_cast<double>(std::max<std::size_t>(n, 3) - 2);
    auto fill = [&](double level) {
        double s = 0.0;
        for (std::size_t i = 0; i < n; ++i) {
            w[i] = b[i] > 0.0 ? std::clamp((level * b[i] - 1.0) / k, 0.0, cap) : 0.0;
            s += w[i];
        }
        return s;
    };
    // At level 0 nobody reduces; at (1 + k) / min positive b every reducer is full (sum >= 1).
    double lo = 0.0;
    double minPositive = total;
    for (double x : b)
        if (x > 0.0)
            minPositive = std::min(minPositive, x);
    double hi = (1.0 + k) / minPositive;
    for (int iteration = 0; iteration < 200; ++iteration) {
        const double mid = 0.5 * (lo + hi);
        (fill(mid) < 1.0 ? lo : hi) = mid;
    }
    const double s = fill(hi);
    for (double &x : w)
        x /= s; // removes the bisection's last rounding error
    return w;
}

std::vector<std::int64_t> balanceShards(std::int64_t elements, const std::vector<double> &bandwidths,
                                        std::int64_t minShardElements, double maxFraction)
{
    if (elements < 0)
        throw Error("cannot balance a negative number of elements");
    auto w = optimalFractions(bandwidths, maxFraction);
    const std::size_t n = w.size();
    std::vector<double> share(n);
    for (std::size_t i = 0; i < n; ++i)
        share[i] = w[i] * static_cast<double>(elements);

    // Tiny shards cost a round trip each for almost no work: hand them to the others.
    if (minShardElements > 0) {
        const auto largest = static_cast<std::size_t>(std::max_element(share.begin(), share.end()) - share.begin());
        double kept = 0.0;
        for (std::size_t i = 0; i < n; ++i) {
            if (i != largest && share[i] < static_cast<double>(minShardElements))
                share[i] = 0.0;
            kept += share[i];
        }
        for (double &x : share)
            x *= static_cast<double>(elements) / kept;
    }

    // Largest remainders: floor everything, then give the missing units to the largest fractions.
    std::vector<std::int64_t> out(n);
    std::int64_t assigned = 0;
    for (std::size_t i = 0; i < n; ++i) {
        out[i] = static_cast<std::int64_t>(std::floor(share[i]));
        assigned += out[i];
    }
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return share[a] - std::floor(share[a]) > share[b] - std::floor(share[b]);
    });
    // Only members with a share take the remainder; there is at least one (optimalFractions).
    for (std::size_t j = 0, idle = 0; assigned < elements; j = (j + 1) % n) {
        if (share[order[j]] > 0.0 || w[order[j]] > 0.0) {
            ++out[order[j]];
            ++assigned;
            idle = 0;
        } else if (++idle > n) {
            throw Error("load balancing found no member to give the remaining elements to");
        }
    }
    return out;
}

std::vector<std::int64_t> shardShares(const std::vector<double> &bandwidths, std::int64_t total, bool capped)
{
    const auto reducers = static_cast<std::size_t>(
        std::count_if(bandwidths.begin(), bandwidths.end(), [](double b) { return !(b == 0.0); }));
    return balanceShards(total, bandwidths, 0, capped ? fairShareCap(reducers) : 1.0);
}

std::vector<std::int64_t> shardsFromShares(std::int64_t elements, const std::vector<std::int64_t> &shares)
{
    if (elements < 0)
        throw Error("cannot lay out a negative number of elements");
    __int128 total = 0;
    for (const auto s : shares) {
        if (s < 0)
            throw Error("a shard share is negative");
        total += s;
    }
    if (total == 0)
        throw Error("no member of the group has a shard share");
    const std::size_t n = shares.size();
    std::vector<std::int64_t> out(n);
    std::vector<__int128> remainder(n);
    std::int64_t assigned = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const __int128 scaled = static_cast<__int128>(elements) * shares[i];
        out[i] = static_cast<std::int64_t>(scaled / total);
        remainder[i] = scaled % total;
        assigned += out[i];
    }
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
    // sum floors > elements - n, so each member gets at most one more; a member with share 0 has
    // remainder 0 and comes after every member with a remainder.
    for (std::size_t j = 0; assigned < elements; ++j, ++assigned)
        ++out[order[j]];
    return out;
}

} // namespace dedloc
