// All-reduce benchmark: our butterfly all-reduce (none / fp16 / 8-bit) beside libtorch's gloo
// ring all-reduce (ProcessGroupGloo, fp32), N processes on this machine, one vector of E floats.
// Prints, per implementation, the median over rounds of the slowest member's time, and the
// bound 2 (N-1)/N * bytes on the wire / link rate when --link-mbit is given.
//
//   bench_allreduce [--n 2,4,8] [--elements 25000000] [--rounds 3] [--impls ours-none,ours-fp16,ours-8bit,gloo]
//                   [--host 127.0.0.1] [--link-mbit 0] [--netns-mbit 0] [--curve]
// Each measurement spawns N member processes of this executable (--member), which meet through
// files in a temporary directory (gloo: c10d::FileStore). Loopback on 2 cores is CPU-bound.
//
// --netns-mbit R (root only): every member runs in its own network namespace, linked to a
// bridge in a "switch" namespace by a veth pair whose two ends are each limited to R Mbit/s with
// `tc tbf` (the member's upload and download), as a home link would be; members bind
// 10.213.0.<rank+1>. The namespaces are removed on exit (and stale ones from an interrupted run
// on start). Implies --link-mbit R for the bound.
// --curve: our members' links use CurveZMQ as in the swarm (net/DataPlaneSecurity.h, open run);
// members learn it from DEDLOC_BENCH_CURVE=1 in their environment. gloo is unaffected.
#include "net/DataPlaneSecurity.h"
#include "averaging/ButterflyAllReduce.h"
#include "util/Hash.h"
#include "system/TorchRuntime.h"
#include "util/Log.h"

#include "NetnsLinks.h" // tests/support

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <sstream>
#include <csignal>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace dedloc;
using dedloc::test::NetnsLinks;

namespace {

void writeFile(const fs::path &p, const std::string &text)
{
    const auto tmp = p.string() + ".tmp";
    std::ofstream(tmp) << text;
    fs::rename(tmp, p);
}

std::string readFile(const fs::path &p)
{
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Every member writes <name>.<rank> and waits for all N.
void barrier(const fs::path &dir, const std::string &name, int rank, int n, const std::string &content = "x")
{
    writeFile(dir / (name + "." + std::to_string(rank)), content);
    for (int r = 0; r < n; ++r)
        while (!fs::exists(dir / (name + "." + std::to_string(r))))
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

int member(const std::string &impl, int rank, int n, long elements, int rounds, const fs::path &dir,
           const std::string &host)
{
    configureTorchThreads(1);
    std::vector<float> values(static_cast<std::size_t>(elements));
    for (long i = 0; i < elements; ++i)
        values[static_cast<std::size_t>(i)] = static_cast<float>((i % 1000) * 0.001 + rank);
    std::ostringstream out;
    if (impl == "gloo") {
        auto store = c10::make_intrusive<c10d::FileStore>((dir / "store").string(), n);
        auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::minutes(10));
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(host));
        c10d::ProcessGroupGloo group(store, rank, n, options);
        auto tensor = torch::from_blob(values.data(), {elements}, torch::kFloat);
        std::vector<at::Tensor> tensors{tensor};
        group.allreduce(tensors)->wait(); // warm-up: connections
        for (int r = 0; r < rounds; ++r) {
            barrier(dir, "round" + std::to_string(r), rank, n);
            const auto t0 = Clock::now();
            group.allreduce(tensors)->wait();
            out << std::chrono::duration<double>(Clock::now() - t0).count() << "\n";
        }
    } else {
        Compression codec = Compression::None;
        if (impl == "ours-fp16")
            codec = Compression::Fp16;
        else if (impl == "ours-8bit")
            codec = Compression::Uniform8Bit;
        // --curve: each member a fresh identity; "endpoint key" in the barrier file.
        const bool curve = std::getenv("DEDLOC_BENCH_CURVE") != nullptr;
        const auto identity = PeerIdentity::generate();
        const auto security = curve ? std::make_shared<DataPlaneSecurity>(identity, AccessPolicy{}) : nullptr;
        AllReduceEndpoint endpoint(true, "tcp://" + host + ":*", security);
        barrier(dir, "endpoint", rank, n,
                endpoint.endpoint() + " " + toHex(identity.publicKey().data(), identity.publicKey().size()));
        std::vector<GroupMember> members;
        for (int r = 0; r < n; ++r) {
            std::istringstream in(readFile(dir / ("endpoint." + std::to_string(r))));
            std::string address, key;
            in >> address >> key;
            members.push_back({"m" + std::to_string(r), address, 1.0, 1.0, parsePeerKeyHex(key)});
        }
        AllReduceOptions o;
        o.codec = codec;
        o.senderTimeout = o.reducerTimeout = 600.0;
        endpoint.run("warm-up", members, static_cast<std::size_t>(rank), std::span<float>(values).first(1000), o);
        for (int r = 0; r < rounds; ++r) {
            barrier(dir, "round" + std::to_string(r), rank, n);
            const auto t0 = Clock::now();
            const auto report = endpoint.run("round-" + std::to_string(r), members, static_cast<std::size_t>(rank), values, o);
            out << std::chrono::duration<double>(Clock::now() - t0).count() << "\n";
            if (!report.complete)
                std::fprintf(stderr, "member %d: round %d incomplete\n", rank, r);
        }
        barrier(dir, "done", rank, n); // keep the ROUTER alive until everyone has its results
    }
    writeFile(dir / ("result." + std::to_string(rank)), out.str());
    return 0;
}

double measure(const std::string &self, const std::string &impl, int n, long elements, int rounds, const std::string &host,
               const NetnsLinks *links)
{
    const fs::path dir = fs::temp_directory_path() / ("dedloc-bench-" + std::to_string(::getpid()) + "-" + impl + "-" + std::to_string(n));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::vector<pid_t> children;
    for (int r = 0; r < n; ++r) {
        std::vector<std::string> args = {self, "--member", impl, std::to_string(r), std::to_string(n),
                                         std::to_string(elements), std::to_string(rounds), dir.string(),
                                         links ? links->hostOf(r) : host};
        if (links)
            args.insert(args.begin(), {NetnsLinks::ipProgram(), "netns", "exec", links->nameOf(r)});
        std::vector<char *> argv;
        for (auto &a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_t pid = 0;
        if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) == 0)
            children.push_back(pid);
    }
    bool ok = children.size() == static_cast<std::size_t>(n);
    for (pid_t pid : children) {
        int status = 0;
        waitpid(pid, &status, 0);
        ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    std::vector<double> slowest(static_cast<std::size_t>(rounds), 0.0);
    for (int r = 0; ok && r < n; ++r) {
        std::istringstream in(readFile(dir / ("result." + std::to_string(r))));
        for (int k = 0; k < rounds; ++k) {
            double t = 0;
            in >> t;
            slowest[static_cast<std::size_t>(k)] = std::max(slowest[static_cast<std::size_t>(k)], t);
        }
    }
    fs::remove_all(dir);
    if (!ok)
        return -1.0;
    std::sort(slowest.begin(), slowest.end());
    return slowest[slowest.size() / 2];
}

double wireBytesPerElement(const std::string &impl)
{
    if (impl == "ours-fp16")
        return 2.0;
    if (impl == "ours-8bit")
        return 1.0;
    return 4.0;
}

} // namespace

int main(int argc, char **argv)
{
    if (!std::getenv("DEDLOC_LOG"))
        log::setMinimumLevel(log::Level::Warning);
    if (argc >= 2 && std::string(argv[1]) == "--member") {
        // A member never spawns: a malformed member command line is an error, not a coordinator.
        if (argc != 9) {
            std::fprintf(stderr, "bench_allreduce: --member takes 7 arguments\n");
            return 2;
        }
        return member(argv[2], std::stoi(argv[3]), std::stoi(argv[4]), std::stol(argv[5]), std::stoi(argv[6]), argv[7], argv[8]);
    }
    std::string ns = "2,4,8", impls = "ours-none,ours-fp16,ours-8bit,gloo", host = "127.0.0.1";
    long elements = 25'000'000;
    int rounds = 3;
    double linkMbit = 0.0, netnsMbit = 0.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--curve") { // a flag: the next argument is an option again
            --i;
            continue;
        }
        if (a == "--n") ns = argv[i + 1];
        else if (a == "--elements") elements = std::stol(argv[i + 1]);
        else if (a == "--rounds") rounds = std::stoi(argv[i + 1]);
        else if (a == "--impls") impls = argv[i + 1];
        else if (a == "--host") host = argv[i + 1];
        else if (a == "--link-mbit") linkMbit = std::stod(argv[i + 1]);
        else if (a == "--netns-mbit") netnsMbit = std::stod(argv[i + 1]);
    }
    std::unique_ptr<NetnsLinks> links;
    if (netnsMbit > 0) {
        std::string why;
        if (!NetnsLinks::available(&why)) {
            std::fprintf(stderr, "bench_allreduce: --netns-mbit %s\n", why.c_str());
            return 2;
        }
        int most = 0;
        std::stringstream nl(ns);
        for (std::string nText; std::getline(nl, nText, ',');)
            most = std::max(most, std::stoi(nText));
        try {
            links = std::make_unique<NetnsLinks>("dlbench", most, netnsMbit);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "bench_allreduce: %s\n", e.what());
            return 2;
        }
        // Ctrl-C still removes the namespaces (the destructor runs on a normal return only).
        std::signal(SIGINT, [](int) {
            NetnsLinks::removeAll("dlbench");
            std::_Exit(130);
        });
        linkMbit = netnsMbit;
        host = "10.213.0.x (one namespace per member)";
    }
    const bool curve = std::find(argv + 1, argv + argc, std::string("--curve")) != argv + argc;
    if (curve)
        setenv("DEDLOC_BENCH_CURVE", "1", 1); // the members inherit it
    const std::string self = fs::read_symlink("/proc/self/exe");
    std::printf("bench_allreduce: %ld floats, median of %d rounds of the slowest member, host %s%s%s\n", elements, rounds,
                host.c_str(), linkMbit > 0 ? (", links " + std::to_string(linkMbit) + " Mbit/s").c_str() : "",
                curve ? ", CurveZMQ on our links" : "");
    std::printf("%-3s %-10s %10s %10s %12s\n", "N", "impl", "seconds", "vs gloo", "vs bound");
    std::stringstream nl(ns);
    for (std::string nText; std::getline(nl, nText, ',');) {
        const int n = std::stoi(nText);
        std::vector<std::pair<std::string, double>> results;
        std::stringstream il(impls);
        for (std::string impl; std::getline(il, impl, ',');)
            results.emplace_back(impl, measure(self, impl, n, elements, rounds, host, links.get()));
        double gloo = -1;
        for (auto &[impl, t] : results)
            if (impl == "gloo")
                gloo = t;
        for (auto &[impl, t] : results) {
            const double bound = linkMbit > 0 ? 2.0 * (n - 1) / n * elements * wireBytesPerElement(impl) * 8.0 / (linkMbit * 1e6) : 0.0;
            std::printf("%-3d %-10s %10.3f %10s %12s\n", n, impl.c_str(), t,
                        gloo > 0 ? (std::to_string(t / gloo).substr(0, 5) + "x").c_str() : "-",
                        bound > 0 ? (std::to_string(t / bound).substr(0, 5) + "x").c_str() : "-");
            std::fflush(stdout);
        }
    }
    return 0;
}
