// All-reduce benchmark: our butterfly all-reduce (none / fp16 / 8-bit) beside libtorch's gloo
// ring all-reduce (ProcessGroupGloo, fp32 and fp16), N processes on this machine, one vector of E
// floats. Prints, per implementation, the median over rounds of the slowest member's time, its
// ratio to gloo at fp32 and at fp16, and to the bound 2 (N-1)/N * bytes on the wire / link rate
// when --link-mbit is given. `bench_allreduce --help` (kUsage below) lists the options.
//
// Each measurement spawns N member processes of this executable (--member), which meet through
// files in a temporary directory (gloo: c10d::FileStore). Loopback on 2 cores is CPU-bound.
// Every implementation computes the average: ours inside the round, gloo as a SUM all-reduce
// followed by a division by N, both timed (until 2026-12-01 the gloo rows timed the sum alone).
//
// --netns-mbit R (root only): every member runs in its own network namespace, linked to a
// bridge in a "switch" namespace by a veth pair whose two ends are each limited to R Mbit/s with
// `tc tbf` (the member's upload and download), as a home link would be; members bind
// 10.213.0.<rank+1>. The namespaces are removed on exit, also after SIGINT or SIGTERM (and stale
// ones from a killed run on start). Implies --link-mbit R for the bound.
// SIGINT/SIGTERM: the coordinator stops its members (SIGTERM), removes their temporary
// directory and the namespaces, and exits with 128 + the signal.
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
#include <cerrno>
#include <charconv>
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

// Set by SIGINT/SIGTERM in the coordinator; the measurements end and the normal cleanup runs.
volatile std::sig_atomic_t g_stopSignal = 0;

void onStopSignal(int signal)
{
    g_stopSignal = signal;
}

void installStopSignals()
{
    struct sigaction action {};
    action.sa_handler = onStopSignal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

// Reaps every member; after a stop signal, stops the ones still running first. Returns whether
// each exited with 0 and no stop signal came.
bool waitForMembers(std::vector<pid_t> members)
{
    bool ok = true, stopped = false;
    while (!members.empty()) {
        if (g_stopSignal != 0 && !stopped) {
            for (const pid_t pid : members)
                ::kill(pid, SIGTERM);
            stopped = true;
        }
        for (auto it = members.begin(); it != members.end();) {
            int status = 0;
            const pid_t r = ::waitpid(*it, &status, WNOHANG);
            if (r == 0 || (r < 0 && errno == EINTR)) {
                ++it;
                continue;
            }
            ok = ok && r == *it && WIFEXITED(status) && WEXITSTATUS(status) == 0;
            it = members.erase(it);
        }
        if (!members.empty())
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return ok && !stopped;
}

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

// One member's gloo rounds: a SUM all-reduce, then / N (the average, as ours computes). With
// `half` the tensor is converted to fp16 before the warm-up, so the wire and the sums are fp16
// and the conversion is not timed (ours-fp16 times its own encoding and decoding).
std::string glooRounds(std::vector<float> &values, bool half, int rank, int n, int rounds, const fs::path &dir,
                       const std::string &host)
{
    auto store = c10::make_intrusive<c10d::FileStore>((dir / "store").string(), n);
    auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::minutes(10));
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(host));
    c10d::ProcessGroupGloo group(store, rank, n, options);
    auto tensor = torch::from_blob(values.data(), {static_cast<std::int64_t>(values.size())}, torch::kFloat);
    if (half)
        tensor = tensor.to(torch::kHalf);
    std::vector<at::Tensor> tensors{tensor};
    const auto average = [&] {
        group.allreduce(tensors)->wait();
        tensor.div_(n);
    };
    average(); // warm-up: connections
    std::ostringstream out;
    for (int r = 0; r < rounds; ++r) {
        barrier(dir, "round" + std::to_string(r), rank, n);
        const auto t0 = Clock::now();
        average();
        out << std::chrono::duration<double>(Clock::now() - t0).count() << "\n";
    }
    return out.str();
}

Compression codecOf(const std::string &impl)
{
    if (impl == "ours-fp16")
        return Compression::Fp16;
    if (impl == "ours-8bit")
        return Compression::Uniform8Bit;
    return Compression::None;
}

// One member's rounds of our butterfly all-reduce; --curve: each member a fresh identity, and
// "endpoint key" in the barrier file.
std::string oursRounds(std::vector<float> &values, Compression codec, int rank, int n, int rounds, const fs::path &dir,
                       const std::string &host)
{
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
    std::ostringstream out;
    for (int r = 0; r < rounds; ++r) {
        barrier(dir, "round" + std::to_string(r), rank, n);
        const auto t0 = Clock::now();
        const auto report =
            endpoint.run("round-" + std::to_string(r), members, static_cast<std::size_t>(rank), values, o);
        out << std::chrono::duration<double>(Clock::now() - t0).count() << "\n";
        if (!report.complete)
            std::fprintf(stderr, "member %d: round %d incomplete\n", rank, r);
    }
    barrier(dir, "done", rank, n); // keep the ROUTER alive until everyone has its results
    return out.str();
}

int member(const std::string &impl, int rank, int n, long elements, int rounds, const fs::path &dir,
           const std::string &host)
{
    configureTorchThreads(1);
    std::vector<float> values(static_cast<std::size_t>(elements));
    for (long i = 0; i < elements; ++i)
        values[static_cast<std::size_t>(i)] = static_cast<float>((i % 1000) * 0.001 + rank);
    try {
        const std::string times = impl.starts_with("gloo")
                                      ? glooRounds(values, impl == "gloo-fp16", rank, n, rounds, dir, host)
                                      : oursRounds(values, codecOf(impl), rank, n, rounds, dir, host);
        writeFile(dir / ("result." + std::to_string(rank)), times);
        return 0;
    } catch (const std::exception &e) { // e.g. a dtype this libtorch's gloo does not reduce
        std::fprintf(stderr, "bench_allreduce: member %d of %s failed: %s\n", rank, impl.c_str(), e.what());
        return 1;
    }
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
    const bool allStarted = children.size() == static_cast<std::size_t>(n);
    const bool ok = waitForMembers(children) && allStarted;
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
    if (impl == "ours-fp16" || impl == "gloo-fp16")
        return 2.0;
    if (impl == "ours-8bit")
        return 1.0;
    return 4.0;
}

constexpr const char *kUsage = R"(usage: bench_allreduce [options]

Times one all-reduce (the average) of a vector of E floats across N member processes on this
machine: our butterfly all-reduce beside libtorch's gloo ring all-reduce (ProcessGroupGloo),
at each N. Each measurement spawns N members of this executable; they meet through files in a
temporary directory and run one warm-up round, then the timed rounds.

options (default in brackets):
  --n LIST           member counts, comma-separated, each 2-64 [2,4,8]
  --elements E       floats in the vector, 1000 or more [25000000]
  --rounds R         timed rounds per measurement [3]
  --impls LIST       comma-separated, any of these [ours-none,ours-fp16,ours-8bit,gloo]:
                       ours-none   our butterfly, fp32 on the wire
                       ours-fp16   our butterfly, fp16 on the wire (encoding timed)
                       ours-8bit   our butterfly, 8-bit uniform quantization on the wire
                       gloo        gloo SUM all-reduce of an fp32 tensor, then / N
                       gloo-fp16   the same on an fp16 tensor (converted before timing)
  --host ADDR        address the members bind on loopback [127.0.0.1]
  --link-mbit R      link rate in Mbit/s for the "vs bound" column; 0: no bound [0]
  --netns-mbit R     root only: each member in its own network namespace, with a veth link
                     limited to R Mbit/s each way (tc tbf); implies --link-mbit R; 0: loopback [0]
  --curve            CurveZMQ on our members' links, as in the swarm (gloo unaffected)
  -h, --help         print this and exit

output: a title line, then one row per N and implementation:
  N  impl  seconds  vs gloo  vs gloo16  vs bound
seconds: median over the rounds of the slowest member's time; vs gloo / vs gloo16: seconds
divided by gloo's (fp32) / gloo-fp16's in the same run at the same N ("-" when not measured);
vs bound: seconds / (2 (N-1)/N * E * bytes per element on the wire * 8 / link rate), with 4,
2 or 1 bytes per element (fp32, fp16, 8-bit). A failed measurement prints -1.000 seconds.
Exit status: 0 after the table, 2 for a bad command line or missing --netns-mbit support.
)";

const std::vector<std::string> kImpls = {"ours-none", "ours-fp16", "ours-8bit", "gloo", "gloo-fp16"};
const std::vector<std::string> kValueOptions = {"--n",    "--elements",  "--rounds",    "--impls",
                                                "--host", "--link-mbit", "--netns-mbit"};

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Options {
    std::vector<int> ns = {2, 4, 8};
    std::vector<std::string> impls = {"ours-none", "ours-fp16", "ours-8bit", "gloo"};
    std::string host = "127.0.0.1";
    long elements = 25'000'000;
    int rounds = 3;
    double linkMbit = 0.0, netnsMbit = 0.0;
    bool curve = false, help = false;
};

std::vector<std::string> splitList(const std::string &text)
{
    std::vector<std::string> items;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');)
        items.push_back(item);
    return items;
}

long wholeNumber(const std::string &option, const std::string &text, long least, long most)
{
    long value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size() || value < least || value > most)
        throw UsageError(option + " takes a whole number from " + std::to_string(least) + " to " +
                         std::to_string(most) + ", not '" + text + "'");
    return value;
}

double rate(const std::string &option, const std::string &text)
{
    char *end = nullptr; // strtod, not from_chars: GCC 10's library has no floating-point from_chars
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !(value >= 0) || value > 1e6)
        throw UsageError(option + " takes a rate in Mbit/s from 0 to 1000000, not '" + text + "'");
    return value;
}

void setOption(Options &o, const std::string &option, const std::string &value)
{
    if (option == "--n") {
        o.ns.clear();
        for (const auto &item : splitList(value))
            o.ns.push_back(static_cast<int>(wholeNumber(option, item, 2, 64)));
    } else if (option == "--impls") {
        o.impls = splitList(value);
        for (const auto &impl : o.impls)
            if (std::find(kImpls.begin(), kImpls.end(), impl) == kImpls.end())
                throw UsageError("--impls: unknown implementation '" + impl + "'");
    } else if (option == "--elements") {
        o.elements = wholeNumber(option, value, 1000, 1'000'000'000);
    } else if (option == "--rounds") {
        o.rounds = static_cast<int>(wholeNumber(option, value, 1, 1000));
    } else if (option == "--host") {
        o.host = value;
    } else if (option == "--link-mbit") {
        o.linkMbit = rate(option, value);
    } else { // the last of kValueOptions
        o.netnsMbit = rate(option, value);
    }
    if (o.ns.empty() || o.impls.empty())
        throw UsageError(option + " needs at least one item");
}

Options parseOptions(int argc, char **argv)
{
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help")
            o.help = true;
        else if (a == "--curve")
            o.curve = true;
        else if (std::find(kValueOptions.begin(), kValueOptions.end(), a) == kValueOptions.end())
            throw UsageError((a.starts_with("-") ? "unknown option '" : "unexpected argument '") + a + "'");
        else if (i + 1 == argc)
            throw UsageError(a + " needs a value");
        else
            setOption(o, a, argv[++i]);
    }
    return o;
}

// --netns-mbit: the namespaces for the largest N, removed by the destructor (main returns after a
// stop signal too). Null, with the reason printed, when they cannot be made.
std::unique_ptr<NetnsLinks> makeLinks(const Options &o)
{
    std::string why;
    if (!NetnsLinks::available(&why)) {
        std::fprintf(stderr, "bench_allreduce: --netns-mbit %s\n", why.c_str());
        return nullptr;
    }
    try {
        return std::make_unique<NetnsLinks>("dlbench", *std::max_element(o.ns.begin(), o.ns.end()), o.netnsMbit);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_allreduce: %s\n", e.what());
        return nullptr;
    }
}

std::string ratio(double t, double reference)
{
    return t > 0 && reference > 0 ? (std::to_string(t / reference).substr(0, 5) + "x") : "-";
}

void printRows(const Options &o, int n, const std::vector<std::pair<std::string, double>> &results)
{
    const auto timeOf = [&](const std::string &impl) {
        for (const auto &[name, t] : results)
            if (name == impl)
                return t;
        return -1.0;
    };
    for (const auto &[impl, t] : results) {
        const double wireBits = 2.0 * (n - 1) / n * o.elements * wireBytesPerElement(impl) * 8.0;
        const double bound = o.linkMbit > 0 ? wireBits / (o.linkMbit * 1e6) : 0.0;
        std::printf("%-3d %-10s %10.3f %10s %10s %10s\n", n, impl.c_str(), t, ratio(t, timeOf("gloo")).c_str(),
                    ratio(t, timeOf("gloo-fp16")).c_str(), ratio(t, bound).c_str());
        std::fflush(stdout);
    }
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
    Options o;
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
    installStopSignals(); // the coordinator only: members keep the default dispositions
    std::unique_ptr<NetnsLinks> links;
    std::string host = o.host;
    if (o.netnsMbit > 0) {
        if (!(links = makeLinks(o)))
            return 2;
        if (g_stopSignal != 0) // came while the links were made
            return 128 + g_stopSignal;
        o.linkMbit = o.netnsMbit;
        host = "10.213.0.x (one namespace per member)";
    }
    if (o.curve)
        setenv("DEDLOC_BENCH_CURVE", "1", 1); // the members inherit it
    const std::string self = fs::read_symlink("/proc/self/exe");
    std::printf("bench_allreduce: %ld floats, median of %d rounds of the slowest member, host %s%s%s\n", o.elements,
                o.rounds, host.c_str(),
                o.linkMbit > 0 ? (", links " + std::to_string(o.linkMbit) + " Mbit/s").c_str() : "",
                o.curve ? ", CurveZMQ on our links" : "");
    std::printf("%-3s %-10s %10s %10s %10s %10s\n", "N", "impl", "seconds", "vs gloo", "vs gloo16", "vs bound");
    for (const int n : o.ns) {
        std::vector<std::pair<std::string, double>> results;
        for (const auto &impl : o.impls)
            if (g_stopSignal == 0)
                results.emplace_back(impl, measure(self, impl, n, o.elements, o.rounds, o.host, links.get()));
        if (g_stopSignal != 0) {
            std::fprintf(stderr, "bench_allreduce: stopped by signal %d%s\n", static_cast<int>(g_stopSignal),
                         links ? "; removing the network namespaces" : "");
            return 128 + g_stopSignal; // `links` removes the namespaces
        }
        printRows(o, n, results);
    }
    return 0;
}
