// All-reduce benchmark: our butterfly all-reduce (none / fp16 / 8-bit) beside libtorch's gloo
// ring all-reduce (ProcessGroupGloo, fp32 and fp16), N processes on this machine, one vector of E
// floats. Prints, per implementation, the median over rounds of the slowest member's time, its
// ratio to gloo at fp32 and at fp16, and to the bandwidth bound when the links are known.
// `bench_allreduce --help` (AllReduceBenchOptions.cpp) lists the options and the bounds.
//
// Each measurement spawns N member processes of this executable (--member, AllReduceMember.h),
// which meet through files in a temporary directory (gloo: c10d::FileStore). Loopback on 2 cores
// is CPU-bound. Every implementation computes the average: ours inside the round, gloo as a SUM
// all-reduce followed by a division by N, both timed (until 2026-12-01 the gloo rows timed the
// sum alone).
//
// --netns-mbit R / --internet DOWN/UP [--behind-nat K] (root only): every member runs in its own
// network namespace on an emulated link (AllReduceNet.h). The namespaces are removed on exit,
// also after SIGINT or SIGTERM (and stale ones from a killed run on start).
// SIGINT/SIGTERM: the coordinator stops its members (SIGTERM), removes their temporary
// directory and the namespaces, and exits with 128 + the signal.
// --curve: our members' links use CurveZMQ as in the swarm (net/DataPlaneSecurity.h, open run);
// members learn it from DEDLOC_BENCH_CURVE=1 in their environment. gloo is unaffected.
#include "AllReduceBenchOptions.h"
#include "AllReduceMember.h"
#include "AllReduceNet.h"
#include "BenchFiles.h"
#include "BenchProcesses.h"

#include "util/Log.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace dedloc::bench;
namespace test = dedloc::test;

namespace {

// nullopt: not run (gloo behind NAT).
using Result = std::pair<std::string, std::optional<double>>;

// The slowest member's time in each round, from the members' result files.
std::vector<double> slowestPerRound(const fs::path &dir, int n, int rounds)
{
    std::vector<double> slowest(static_cast<std::size_t>(rounds), 0.0);
    for (int r = 0; r < n; ++r) {
        std::istringstream in(readFile(dir / ("result." + std::to_string(r))));
        for (auto &s : slowest) {
            double t = 0;
            in >> t;
            s = std::max(s, t);
        }
    }
    return slowest;
}

// One measurement: N members of `impl`; the median over the rounds of the slowest member's
// time, -1 when a member failed or a stop signal came.
double measure(const std::string &impl, int n, const BenchOptions &o, const AllReduceNet &net)
{
    const fs::path dir = fs::temp_directory_path() /
                         ("dedloc-bench-" + std::to_string(::getpid()) + "-" + impl + "-" + std::to_string(n));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string self = selfExecutable();
    std::vector<pid_t> children;
    for (int r = 0; r < n; ++r) {
        const MemberPlace place = net.placeOf(r, n);
        const pid_t pid =
            spawnIn(place.ns, {self, "--member", impl, std::to_string(r), std::to_string(n), std::to_string(o.elements),
                               std::to_string(o.rounds), dir.string(), place.host});
        if (pid > 0)
            children.push_back(pid);
    }
    const bool allStarted = children.size() == static_cast<std::size_t>(n);
    const bool ok = waitForChildren(children) && allStarted;
    auto slowest = ok ? slowestPerRound(dir, n, o.rounds) : std::vector<double>{};
    fs::remove_all(dir);
    if (!ok)
        return -1.0;
    std::sort(slowest.begin(), slowest.end());
    return slowest[slowest.size() / 2];
}

double wireBytesPerElement(const std::string &impl)
{
    if (impl.starts_with("ours-fp16") || impl == "gloo-fp16")
        return 2.0;
    if (impl.starts_with("ours-8bit"))
        return 1.0;
    return 4.0;
}

// Seconds the busiest link needs (AllReduceBenchOptions.cpp kUsage), 0 without a known rate.
double boundSeconds(const BenchOptions &o, int n, const std::string &impl, int behindNat)
{
    const double vectorBits = static_cast<double>(o.elements) * wireBytesPerElement(impl) * 8.0;
    if (o.downMbit > 0) {
        const int reducers = n - behindNat;
        const double busiest = static_cast<double>(reducers + n - 2) / reducers * vectorBits;
        return busiest / (std::min(o.downMbit, o.upMbit) * 1e6);
    }
    return o.linkMbit > 0 ? 2.0 * (n - 1) / n * vectorBits / (o.linkMbit * 1e6) : 0.0;
}

std::string ratio(std::optional<double> t, std::optional<double> reference)
{
    return t && reference && *t > 0 && *reference > 0 ? (std::to_string(*t / *reference).substr(0, 5) + "x") : "-";
}

void printRows(const BenchOptions &o, int n, int behindNat, const std::vector<Result> &results)
{
    const auto timeOf = [&](const std::string &impl) -> std::optional<double> {
        for (const auto &[name, t] : results)
            if (name == impl)
                return t;
        return std::nullopt;
    };
    for (const auto &[impl, t] : results) {
        const double bound = boundSeconds(o, n, impl, behindNat);
        char seconds[32] = "-";
        if (t)
            std::snprintf(seconds, sizeof seconds, "%.3f", *t);
        std::printf("%-3d %-15s %10s %10s %10s %10s\n", n, impl.c_str(), seconds, ratio(t, timeOf("gloo")).c_str(),
                    ratio(t, timeOf("gloo-fp16")).c_str(),
                    ratio(t, bound > 0 ? std::optional(bound) : std::nullopt).c_str());
        std::fflush(stdout);
    }
}

// The members' network, or nullptr with the reason printed when it cannot be made.
std::unique_ptr<AllReduceNet> makeNet(const BenchOptions &o)
{
    const int maxN = *std::max_element(o.ns.begin(), o.ns.end());
    std::string why;
    if (o.netnsMbit <= 0 && o.downMbit <= 0)
        return std::make_unique<AllReduceNet>(AllReduceNet::loopback(o.host));
    if (o.netnsMbit > 0 ? !test::NetnsLinks::available(&why) : !test::EmulatedInternet::available(&why)) {
        std::fprintf(stderr, "bench_allreduce: %s %s\n", o.netnsMbit > 0 ? "--netns-mbit" : "--internet", why.c_str());
        return nullptr;
    }
    try {
        return std::make_unique<AllReduceNet>(o.netnsMbit > 0
                                                  ? AllReduceNet::links(maxN, o.netnsMbit)
                                                  : AllReduceNet::internet(maxN, {o.downMbit, o.upMbit, o.delayMs}, o.behindNat));
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_allreduce: %s\n", e.what());
        return nullptr;
    }
}

void printTitle(const BenchOptions &o, const AllReduceNet &net)
{
    char links[96] = "";
    if (o.downMbit > 0)
        std::snprintf(links, sizeof links, ", links %g Mbit/s down, %g up, round trip +%g ms", o.downMbit, o.upMbit,
                      2.0 * o.delayMs);
    else if (o.linkMbit > 0)
        std::snprintf(links, sizeof links, ", links %s Mbit/s", std::to_string(o.linkMbit).c_str());
    std::printf("bench_allreduce: %ld floats, median of %d rounds of the slowest member, host %s%s%s\n", o.elements,
                o.rounds, net.description().c_str(), links, o.curve ? ", CurveZMQ on our links" : "");
    const bool gloo = std::any_of(o.impls.begin(), o.impls.end(), [](auto &i) { return i.starts_with("gloo"); });
    if (net.behindNat() > 0 && gloo)
        std::printf("gloo rows skipped: gloo connects every pair of members, and the %d behind NAT accept none\n",
                    net.behindNat());
    std::printf("%-3s %-15s %10s %10s %10s %10s\n", "N", "impl", "seconds", "vs gloo", "vs gloo16", "vs bound");
}

int memberMain(int argc, char **argv)
{
    // A member never spawns: a malformed member command line is an error, not a coordinator.
    if (argc != 9) {
        std::fprintf(stderr, "bench_allreduce: --member takes 7 arguments\n");
        return 2;
    }
    return runMember(
        {argv[2], std::stoi(argv[3]), std::stoi(argv[4]), std::stoi(argv[6]), std::stol(argv[5]), argv[7], argv[8]});
}

} // namespace

int main(int argc, char **argv)
{
    if (!std::getenv("DEDLOC_LOG"))
        dedloc::log::setMinimumLevel(dedloc::log::Level::Warning);
    if (argc >= 2 && std::string(argv[1]) == "--member")
        return memberMain(argc, argv);
    BenchOptions o;
    try {
        o = parseOptions(argc, argv);
    } catch (const UsageError &e) {
        std::fprintf(stderr, "bench_allreduce: %s\nTry 'bench_allreduce --help' for the options.\n", e.what());
        return 2;
    }
    if (o.help) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    // The members choose their schedule by their uplink's rate, as swarm peers do by theirs.
    const double upMbit = o.upMbit > 0 ? o.upMbit : o.netnsMbit > 0 ? o.netnsMbit : o.linkMbit;
    setenv("DEDLOC_BENCH_UPLOAD_MBIT", std::to_string(upMbit).c_str(), 1);
    installStopSignals(); // the coordinator only: members keep the default dispositions
    const auto net = makeNet(o);
    if (!net)
        return 2;
    if (stopSignal() != 0) // came while the links were made; `net` removes them
        return 128 + stopSignal();
    if (o.netnsMbit > 0)
        o.linkMbit = o.netnsMbit;
    if (o.curve)
        setenv("DEDLOC_BENCH_CURVE", "1", 1); // the members inherit it
    printTitle(o, *net);
    for (const int n : o.ns) {
        std::vector<Result> results;
        for (const auto &impl : o.impls) {
            if (impl.starts_with("gloo") && net->behindNat() > 0)
                results.emplace_back(impl, std::nullopt);
            else if (stopSignal() == 0)
                results.emplace_back(impl, measure(impl, n, o, *net));
        }
        if (stopSignal() != 0) {
            std::fprintf(stderr, "bench_allreduce: stopped by signal %d%s\n", stopSignal(),
                         o.netnsMbit > 0 || o.downMbit > 0 ? "; removing the network namespaces" : "");
            return 128 + stopSignal(); // `net` removes the namespaces
        }
        printRows(o, n, net->behindNat(), results);
    }
    return 0;
}
