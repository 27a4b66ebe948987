// State-download benchmark (root only): a joiner behind a home router (NAT) downloads the whole
// training state from one or more donors on public hosts of an emulated internet (tests/support/
// EmulatedInternet), as a volunteer does when it joins (averaging/StateDownload.h over the
// donors' averaging/PeerService.h; several donors of one state serve one download together).
// The joiner's link is DOWN/UP Mbit/s (tc tbf); each donor's is --donor-internet (a server's
// 1000/1000 by default, a volunteer's uplink to see several donors add up). Prints each
// repetition's time, the median, and "vs bound" = median / (S * 4 bytes * 8 / min(DOWN, n x
// donor UP)) for each donor count n. `--help`: kStateUsage.
//
// Processes of this executable: the coordinator (builds the internet, spawns the others,
// removes everything on exit, also after SIGINT or SIGTERM), the donors (--donor, each in its
// public host's namespace) and a joiner per donor count (--joiner, in the volunteer's). They
// meet through files in a temporary directory: each donor writes its service endpoint, the
// joiner its times, the coordinator "done" once the last joiner has finished, which ends the
// donors. Plaintext links (the
// swarm's are CurveZMQ; at these rates the wire, not the cipher, bounds a download).
#include "AllReduceBenchOptions.h" // UsageError, wholeNumber
#include "BenchFiles.h"
#include "BenchProcesses.h"
#include "EmulatedInternet.h" // tests/support

#include "averaging/PeerService.h"
#include "averaging/StateDownload.h"
#include "util/Log.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace dedloc;
using namespace dedloc::bench;

namespace {

constexpr const char *kStateUsage = R"(usage: bench_statedownload [options]   (root only)

Times downloadState (core/averaging/StateDownload.h) of a whole training state of S floats
on an emulated internet (tests/support/EmulatedInternet): donors, PeerServices holding the
same state, each on a public host with a DONOR_DOWN/DONOR_UP link; the joiner on a home
router's LAN behind NAT with a DOWN/UP link (tc tbf). Each repetition is a fresh download (new
connections, "state?" then "part?" per part, one request in flight per donor); with two or more
donors the download takes parts from all of them at once.

options (default in brackets):
  --floats S         floats in the state, 1000 or more [3900000, about the tiny run's 15 MB]
  --internet DOWN/UP the joiner's link in Mbit/s, down/up [10/2]
  --repeats R        downloads, timed one after the other [3]
  --part-floats P    the donor's part size in floats (the swarm's is 131072) [131072]
  --donors N[,N...]  donor counts, each measured in turn in one run [1]
  --donor-internet DOWN/UP  each donor's link in Mbit/s [1000/1000]
  -h, --help         print this and exit

output: a title line, then per donor count n one line per repetition (seconds, Mbit/s of
  state received), then  donors <n>  median <seconds>  bound <seconds>  vs bound <ratio>
bound: S * 4 bytes * 8 / min(DOWN, n * DONOR_UP), the state's bytes at the slower of the
joiner's downlink and the donors' uplinks together.
Exit status: 0 after the figures, 1 if a download failed, 2 for a bad command line or
without root (network namespaces, tc, nftables).
)";

constexpr const char *kRun = "bench-state";
struct Options {
    long floats = 3'900'000;
    double downMbit = 10.0, upMbit = 2.0;
    double donorDownMbit = 1000.0, donorUpMbit = 1000.0;
    std::vector<int> donorCounts{1};
    int repeats = 3;
    long partFloats = 128 * 1024;
    bool help = false;
};

float valueAt(long i)
{
    return static_cast<float>((i % 1000) * 0.001);
}

// --- the donor and the joiner ------------------------------------------------------------------

int donorMain(const fs::path &dir, const std::string &address, long floats, long partFloats)
{
    auto snapshot = std::make_shared<StateSnapshot>();
    snapshot->epoch = 1;
    snapshot->values.resize(static_cast<std::size_t>(floats));
    for (long i = 0; i < floats; ++i)
        snapshot->values[static_cast<std::size_t>(i)] = valueAt(i);
    PeerService service(kRun, "tcp://" + address + ":*", static_cast<std::uint64_t>(partFloats));
    service.setState(snapshot);
    writeFile(dir / ("donor-" + address), service.endpoint());
    waitForFile(dir / "done");
    return 0;
}

bool holdsTheState(const StateSnapshot &s, long floats)
{
    if (s.values.size() != static_cast<std::size_t>(floats))
        return false;
    for (long i = 0; i < floats; ++i)
        if (s.values[static_cast<std::size_t>(i)] != valueAt(i))
            return false;
    return true;
}

// The donors' endpoints are in `endpointsFile`, one a line.
int joinerMain(const fs::path &dir, const fs::path &endpointsFile, long floats, int repeats)
{
    std::vector<DonorAdvert> donors;
    std::istringstream endpoints(readFile(endpointsFile));
    for (std::string endpoint; std::getline(endpoints, endpoint);)
        donors.push_back({"donor-" + std::to_string(donors.size()), endpoint, 1, {}});
    const std::atomic<bool> stop{false};
    std::ostringstream times;
    for (int r = 0; r < repeats; ++r) {
        std::string why;
        const auto t0 = Clock::now();
        const auto state = downloadState(donors, kRun, 1, static_cast<std::uint64_t>(floats), {}, stop, &why);
        const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        if (!state || !holdsTheState(*state, floats)) {
            std::fprintf(stderr, "bench_statedownload: download %d failed: %s\n", r + 1,
                         state ? "the values differ from the donor's" : why.c_str());
            return 1;
        }
        times << seconds << "\n";
    }
    writeFile(dir / "result", times.str());
    return 0;
}

// --- the coordinator ---------------------------------------------------------------------------

// "DOWN/UP" in Mbit/s, both above 0, into o.downMbit and o.upMbit.
void setInternet(Options &o, const std::string &text, const std::string &option)
{
    const auto slash = text.find('/');
    char *downEnd = nullptr, *upEnd = nullptr; // strtod: GCC 10 has no floating-point from_chars
    const std::string down = text.substr(0, slash), up = slash == std::string::npos ? "" : text.substr(slash + 1);
    o.downMbit = std::strtod(down.c_str(), &downEnd);
    o.upMbit = std::strtod(up.c_str(), &upEnd);
    if (down.empty() || up.empty() || *downEnd != '\0' || *upEnd != '\0' || !(o.downMbit > 0) || !(o.upMbit > 0) ||
        o.downMbit > 1e5 || o.upMbit > 1e5)
        throw UsageError(option + " takes DOWN/UP in Mbit/s above 0, e.g. 10/2, not '" + text + "'");
}

void setDonorInternet(Options &o, const std::string &text)
{
    Options link;
    setInternet(link, text, "--donor-internet");
    o.donorDownMbit = link.downMbit;
    o.donorUpMbit = link.upMbit;
}

void setDonorCounts(Options &o, const std::string &text)
{
    o.donorCounts.clear();
    std::istringstream in(text);
    for (std::string item; std::getline(in, item, ',');)
        o.donorCounts.push_back(static_cast<int>(wholeNumber("--donors", item, 1, 8)));
    if (o.donorCounts.empty())
        throw UsageError("--donors takes donor counts, e.g. 1,2,3");
}

Options parseStateOptions(int argc, char **argv)
{
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            o.help = true;
            continue;
        }
        if (a != "--floats" && a != "--internet" && a != "--repeats" && a != "--part-floats" && a != "--donors"
            && a != "--donor-internet")
            throw UsageError((a.starts_with("-") ? "unknown option '" : "unexpected argument '") + a + "'");
        if (i + 1 == argc)
            throw UsageError(a + " needs a value");
        const std::string value = argv[++i];
        if (a == "--floats")
            o.floats = wholeNumber(a, value, 1000, 1'000'000'000);
        else if (a == "--repeats")
            o.repeats = static_cast<int>(wholeNumber(a, value, 1, 1000));
        else if (a == "--part-floats")
            o.partFloats = wholeNumber(a, value, 1024, 16 * 1024 * 1024);
        else if (a == "--donors")
            setDonorCounts(o, value);
        else if (a == "--donor-internet")
            setDonorInternet(o, value);
        else
            setInternet(o, value, a);
    }
    return o;
}

std::vector<double> readTimes(const fs::path &file)
{
    std::vector<double> times;
    std::istringstream in(readFile(file));
    for (double t = 0; in >> t;)
        times.push_back(t);
    return times;
}

void printFigures(const Options &o, int donors, std::vector<double> times)
{
    const double stateBits = static_cast<double>(o.floats) * 4.0 * 8.0;
    for (std::size_t r = 0; r < times.size(); ++r)
        std::printf("%-6zu %10.3f s %10.2f Mbit/s\n", r + 1, times[r], stateBits / times[r] / 1e6);
    std::sort(times.begin(), times.end());
    const double rate = std::min(o.downMbit, donors * o.donorUpMbit);
    const double median = times[times.size() / 2], bound = stateBits / (rate * 1e6);
    std::printf("donors %d  median %.3f s  bound %.3f s  vs bound %.3fx\n", donors, median, bound, median / bound);
    std::fflush(stdout);
}

// Times downloads from the first n donors with a joiner of its own. False if it failed.
bool timeDownloads(const Options &o, const test::EmulatedInternet &net, int joinerHost, const fs::path &dir,
                   const std::vector<std::string> &endpoints, int n)
{
    std::string list;
    for (int i = 0; i < n; ++i)
        list += endpoints[static_cast<std::size_t>(i)] + "\n";
    writeFile(dir / "endpoints", list);
    fs::remove(dir / "result");
    const pid_t joiner = spawnIn(net.namespaceOf(joinerHost), {selfExecutable(), "--joiner", dir.string(),
                                                               (dir / "endpoints").string(), std::to_string(o.floats),
                                                               std::to_string(o.repeats)});
    const bool joined = joiner > 0 && waitForChildren({joiner});
    const auto times = readTimes(dir / "result");
    if (!joined || times.size() != static_cast<std::size_t>(o.repeats))
        return false;
    printFigures(o, n, times);
    return true;
}

// Spawns the donors, times each donor count with a joiner, then ends the donors. Returns the
// process exit status.
int runDownloads(const Options &o, const test::EmulatedInternet &net, const std::vector<int> &donorHosts,
                 int joinerHost)
{
    const fs::path dir = fs::temp_directory_path() / ("dedloc-statebench-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string self = selfExecutable();
    std::vector<pid_t> donors;
    std::vector<std::string> endpoints;
    for (const int host : donorHosts) {
        donors.push_back(spawnIn(net.namespaceOf(host), {self, "--donor", dir.string(), net.addressOf(host),
                                                         std::to_string(o.floats), std::to_string(o.partFloats)}));
        if (donors.back() > 0 && waitForFile(dir / ("donor-" + net.addressOf(host)), 60.0))
            endpoints.push_back(readFile(dir / ("donor-" + net.addressOf(host))));
    }
    bool ok = endpoints.size() == donorHosts.size();
    for (std::size_t i = 0; ok && i < o.donorCounts.size() && stopSignal() == 0; ++i)
        ok = timeDownloads(o, net, joinerHost, dir, endpoints, o.donorCounts[i]);
    writeFile(dir / "done", "x");
    std::erase(donors, pid_t(-1));
    const bool donorsOk = waitForChildren(donors);
    fs::remove_all(dir);
    if (stopSignal() != 0) {
        std::fprintf(stderr, "bench_statedownload: stopped by signal %d; removing the network namespaces\n",
                     stopSignal());
        return 128 + stopSignal();
    }
    if (!ok || !donorsOk) {
        std::fprintf(stderr, "bench_statedownload: the %s failed\n", ok ? "donors" : "download");
        return 1;
    }
    return 0;
}

int coordinatorMain(const Options &o)
{
    std::string why;
    if (!test::EmulatedInternet::available(&why)) {
        std::fprintf(stderr, "bench_statedownload: %s\n", why.c_str());
        return 2;
    }
    installStopSignals(); // the coordinator only: the donor and the joiner keep the defaults
    try {
        test::EmulatedInternet net("dlsdnet", 217);
        std::vector<int> donors;
        const int most = *std::max_element(o.donorCounts.begin(), o.donorCounts.end());
        for (int i = 0; i < most; ++i)
            donors.push_back(net.addPublicHost({o.donorDownMbit, o.donorUpMbit}));
        const int joiner = net.addVolunteer(net.addRouter(), {o.downMbit, o.upMbit});
        std::printf("bench_statedownload: %ld floats (%.1f MB), parts of %ld floats, joiner behind NAT at %g/%g "
                    "Mbit/s, donors public at %g/%g each\n",
                    o.floats, static_cast<double>(o.floats) * 4.0 / 1e6, o.partFloats, o.downMbit, o.upMbit,
                    o.donorDownMbit, o.donorUpMbit);
        std::fflush(stdout);
        if (stopSignal() != 0) // came while the internet was made; `net` removes it
            return 128 + stopSignal();
        return runDownloads(o, net, donors, joiner);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_statedownload: %s\n", e.what());
        return 2;
    }
}

} // namespace

int main(int argc, char **argv)
{
    if (!std::getenv("DEDLOC_LOG"))
        log::setMinimumLevel(log::Level::Warning);
    const std::string mode = argc >= 2 ? argv[1] : "";
    if (mode == "--donor" || mode == "--joiner") { // never a coordinator: a bad line is an error
        if (mode == "--donor" && argc == 6)
            return donorMain(argv[2], argv[3], std::stol(argv[4]), std::stol(argv[5]));
        if (mode == "--joiner" && argc == 6)
            return joinerMain(argv[2], argv[3], std::stol(argv[4]), std::stoi(argv[5]));
        std::fprintf(stderr, "bench_statedownload: %s: wrong number of arguments\n", mode.c_str());
        return 2;
    }
    Options o;
    try {
        o = parseStateOptions(argc, argv);
    } catch (const UsageError &e) {
        std::fprintf(stderr, "bench_statedownload: %s\nTry 'bench_statedownload --help' for the options.\n", e.what());
        return 2;
    }
    if (o.help) {
        std::fputs(kStateUsage, stdout);
        return 0;
    }
    return coordinatorMain(o);
}
