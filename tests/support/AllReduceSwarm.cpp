#include "AllReduceSwarm.h"

#include <cmath>
#include <cstring>
#include <random>
#include <thread>

namespace dedloc::test {

AllReduceOptions checkedRoundOptions()
{
    AllReduceOptions o;
    o.codec = Compression::Fp16;
    o.aggregation = AggregationSpec{AggregationRule::CenteredClip, 2.0, 8.0};
    o.checkResults = true;
    return o;
}

std::vector<float> randomVector(std::size_t n, unsigned seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0F, 1.0F);
    std::vector<float> v(n);
    for (auto &x : v)
        x = d(rng);
    return v;
}

std::vector<PeerIdentity> identities(std::size_t n)
{
    std::vector<PeerIdentity> out;
    for (std::size_t i = 0; i < n; ++i)
        out.push_back(PeerIdentity::generate());
    return out;
}

bool bitwiseEqual(const std::vector<float> &a, const std::vector<float> &b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool closeTo(const std::vector<float> &values, const std::vector<double> &expected, std::size_t begin, std::size_t end)
{
    for (std::size_t k = begin; k < end; ++k)
        if (!(std::abs(values[k] - expected[k]) <= 1e-6 * (1.0 + std::abs(expected[k]))))
            return false;
    return true;
}

Swarm::Swarm(const std::vector<bool> &reachable, const std::vector<double> &weights, std::size_t elements,
             const std::vector<std::shared_ptr<DataPlaneSecurity>> &security, std::vector<PeerIdentity> ids)
    : identities(std::move(ids))
{
    for (std::size_t i = 0; i < reachable.size(); ++i) {
        const auto secure = i < security.size() ? security[i] : nullptr;
        endpoints.push_back(std::make_unique<AllReduceEndpoint>(reachable[i], "tcp://127.0.0.1:*", secure));
        members.push_back({"peer" + std::to_string(i), endpoints.back()->endpoint(), 1.0, weights[i],
                           i < identities.size() ? identities[i].publicKey() : std::array<unsigned char, 32>{}});
        values.push_back(randomVector(elements, 100 + static_cast<unsigned>(i)));
    }
    reports.resize(reachable.size());
}

std::vector<double> Swarm::expectedAverage(const std::vector<std::size_t> &contributors) const
{
    std::vector<double> avg(values[0].size(), 0.0);
    double total = 0.0;
    for (auto i : contributors) {
        for (std::size_t k = 0; k < avg.size(); ++k)
            avg[k] += members[i].weight * values[i][k];
        total += members[i].weight;
    }
    for (auto &x : avg)
        x /= total;
    return avg;
}

void Swarm::run(const AllReduceOptions &options, const std::vector<std::size_t> &participants)
{
    run(std::vector<AllReduceOptions>(members.size(), options), participants);
}

void Swarm::run(const std::vector<AllReduceOptions> &options, const std::vector<std::size_t> &participants)
{
    std::vector<std::thread> threads;
    for (auto i : participants)
        threads.emplace_back(
            [this, i, &options] { reports[i] = endpoints[i]->run("group-1", members, i, values[i], options[i]); });
    for (auto &t : threads)
        t.join();
}

} // namespace dedloc::test
