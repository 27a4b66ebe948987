#pragma once
// A butterfly all-reduce group for tests (core/averaging/ButterflyAllReduce.h): members are
// threads of the test process, each with its own endpoint, talking over TCP on 127.0.0.1.
#include "averaging/ButterflyAllReduce.h"
#include "net/DataPlaneSecurity.h"
#include "net/PeerIdentity.h"

#include <cstddef>
#include <memory>
#include <vector>

namespace dedloc::test {

// n normally distributed floats (mean 0, deviation 1) drawn from `seed`.
[[nodiscard]] std::vector<float> randomVector(std::size_t n, unsigned seed);

// n fresh identities.
[[nodiscard]] std::vector<PeerIdentity> identities(std::size_t n);

// Same length and the same bits.
[[nodiscard]] bool bitwiseEqual(const std::vector<float> &a, const std::vector<float> &b);

// values[k] within 1e-6 (relative, plus 1e-6 absolute) of expected[k] for k in [begin, end).
[[nodiscard]] bool closeTo(const std::vector<float> &values, const std::vector<double> &expected, std::size_t begin,
                           std::size_t end);

// Options of a round that clips (CenteredClip, radius 2) in fp16 and checks its results
// (AllReduceOptions::checkResults).
[[nodiscard]] AllReduceOptions checkedRoundOptions();

struct Swarm {
    std::vector<std::unique_ptr<AllReduceEndpoint>> endpoints;
    std::vector<GroupMember> members; // "peer<i>", bandwidth 1 each: equal shards
    std::vector<std::vector<float>> values;
    std::vector<AllReduceReport> reports;
    std::vector<PeerIdentity> identities;

    // reachable[i] false: client mode. weights[i] 0: auxiliary. `security[i]` (if given and not
    // null): member i's CurveZMQ setup; the member list then carries identities[i]'s key.
    // values[i] = randomVector(elements, 100 + i).
    Swarm(const std::vector<bool> &reachable, const std::vector<double> &weights, std::size_t elements,
          const std::vector<std::shared_ptr<DataPlaneSecurity>> &security = {}, std::vector<PeerIdentity> ids = {});

    // sum_i w_i x_i / sum_i w_i over `contributors`, in double, from the members' weights.
    [[nodiscard]] std::vector<double> expectedAverage(const std::vector<std::size_t> &contributors) const;

    // One round of group "group-1" with every participant on a thread of its own.
    void run(const AllReduceOptions &options, const std::vector<std::size_t> &participants);
    // Same, member i with options[i] (options.size() == members.size()).
    void run(const std::vector<AllReduceOptions> &options, const std::vector<std::size_t> &participants);
};

} // namespace dedloc::test
