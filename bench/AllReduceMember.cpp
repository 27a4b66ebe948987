#include "AllReduceMember.h"

#include "BenchFiles.h"

#include "averaging/ButterflyAllReduce.h"
#include "net/DataPlaneSecurity.h"
#include "system/TorchRuntime.h"
#include "util/Hash.h"

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace dedloc::bench {

namespace {

// One member's gloo rounds: a SUM all-reduce, then / N (the average, as ours computes). With
// `half` the tensor is converted to fp16 before the warm-up, so the wire and the sums are fp16
// and the conversion is not timed (ours-fp16 times its own encoding and decoding).
std::string glooRounds(std::vector<float> &values, bool half, const MemberTask &t)
{
    auto store = c10::make_intrusive<c10d::FileStore>((t.dir / "store").string(), t.n);
    auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::minutes(10));
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(t.host));
    c10d::ProcessGroupGloo group(store, t.rank, t.n, options);
    auto tensor = torch::from_blob(values.data(), {static_cast<std::int64_t>(values.size())}, torch::kFloat);
    if (half)
        tensor = tensor.to(torch::kHalf);
    std::vector<at::Tensor> tensors{tensor};
    const auto average = [&] {
        group.allreduce(tensors)->wait();
        tensor.div_(t.n);
    };
    average(); // warm-up: connections
    std::ostringstream out;
    for (int r = 0; r < t.rounds; ++r) {
        barrier(t.dir, "round" + std::to_string(r), t.rank, t.n);
        const auto t0 = Clock::now();
        average();
        out << std::chrono::duration<double>(Clock::now() - t0).count() << "\n";
    }
    return out.str();
}

Compression codecOf(const std::string &impl)
{
    if (impl.starts_with("ours-fp16"))
        return Compression::Fp16;
    if (impl.starts_with("ours-8bit"))
        return Compression::Uniform8Bit;
    return Compression::None;
}

// The group from the "endpoint.<rank>" files: "<endpoint or -> <key hex>" each. A member in
// client mode has an empty endpoint and bandwidth 0 (it reduces no shard); the others share the
// vector equally.
std::vector<GroupMember> readGroup(const MemberTask &t)
{
    std::vector<GroupMember> members;
    for (int r = 0; r < t.n; ++r) {
        std::istringstream in(readFile(t.dir / (std::string("endpoint.").append(std::to_string(r)))));
        std::string address, key;
        in >> address >> key;
        const bool client = address == ClientModeHost;
        members.push_back(
            {std::string("m").append(std::to_string(r)), client ? std::string() : address, client ? 0.0 : 1.0, 1.0,
             parsePeerKeyHex(key)});
    }
    return members;
}

// One member's rounds of our butterfly all-reduce; --curve: each member a fresh identity, and
// "endpoint key" in the barrier file.
std::string oursRounds(std::vector<float> &values, const MemberTask &t)
{
    const bool curve = std::getenv("DEDLOC_BENCH_CURVE") != nullptr;
    const bool reachable = t.host != ClientModeHost;
    const auto identity = PeerIdentity::generate();
    const auto security = curve ? std::make_shared<DataPlaneSecurity>(identity, AccessPolicy{}) : nullptr;
    AllReduceEndpoint endpoint(reachable, reachable ? "tcp://" + t.host + ":*" : "", security);
    barrier(t.dir, "endpoint", t.rank, t.n,
            (reachable ? endpoint.endpoint() : std::string(ClientModeHost)) + " " +
                toHex(identity.publicKey().data(), identity.publicKey().size()));
    const auto members = readGroup(t);
    const auto me = static_cast<std::size_t>(t.rank);
    AllReduceOptions o;
    o.codec = codecOf(t.impl);
    o.keepConnections = !t.impl.ends_with("-fresh");
    if (const char *part = std::getenv("DEDLOC_BENCH_PART_ELEMENTS")) // experiments with the part size
        o.partElements = static_cast<std::size_t>(std::max(1L, std::atol(part)));
    // As a swarm peer decides for its measured uplink (the coordinator passes the link's rate).
    const char *up = std::getenv("DEDLOC_BENCH_UPLOAD_MBIT");
    o.uploadMbit = up ? std::atof(up) : 0.0;
    o.staggered = std::getenv("DEDLOC_BENCH_ALL_AT_ONCE") == nullptr && staggerUplink(o.uploadMbit);
    o.senderTimeout = o.reducerTimeout = 600.0;
    // The warm-up measures the round trips, as a swarm peer's earlier rounds do.
    o.roundTripSeconds = endpoint.run("warm-up", members, me, std::span<float>(values).first(1000), o).roundTripSeconds;
    if (std::getenv("DEDLOC_BENCH_NO_RTT")) // experiments: as if the round trip were unknown
        o.roundTripSeconds = 0.0;
    o.staggered = o.staggered && staggerUplink(o.uploadMbit, o.roundTripSeconds);
    if (t.rank == 0 && std::getenv("DEDLOC_BENCH_VERBOSE"))
        std::fprintf(stderr, "member 0: round trip %.1f ms, %s\n", o.roundTripSeconds * 1e3,
                     o.staggered ? "staggered" : "all at once");
    std::ostringstream out;
    for (int r = 0; r < t.rounds; ++r) {
        barrier(t.dir, "round" + std::to_string(r), t.rank, t.n);
        const auto t0 = Clock::now();
        const auto report = endpoint.run("round-" + std::to_string(r), members, me, values, o);
        out << std::chrono::duration<double>(Clock::now() - t0).count() << "\n";
        if (!report.complete)
            std::fprintf(stderr, "member %d: round %d incomplete\n", t.rank, r);
    }
    barrier(t.dir, "done", t.rank, t.n); // keep the ROUTER alive until everyone has its results
    return out.str();
}

} // namespace

int runMember(const MemberTask &task)
{
    configureTorchThreads(1);
    std::vector<float> values(static_cast<std::size_t>(task.elements));
    for (long i = 0; i < task.elements; ++i)
        values[static_cast<std::size_t>(i)] = static_cast<float>((i % 1000) * 0.001 + task.rank);
    try {
        const std::string times = task.impl.starts_with("gloo") ? glooRounds(values, task.impl == "gloo-fp16", task)
                                                                : oursRounds(values, task);
        writeFile(task.dir / ("result." + std::to_string(task.rank)), times);
        return 0;
    } catch (const std::exception &e) { // e.g. a dtype this libtorch's gloo does not reduce
        std::fprintf(stderr, "bench_allreduce: member %d of %s failed: %s\n", task.rank, task.impl.c_str(), e.what());
        return 1;
    }
}

} // namespace dedloc::bench
