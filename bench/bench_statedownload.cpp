// State-download benchmark (root only): a joiner behind a home router (NAT) downloads the whole
// training state from a donor on a public host of an emulated internet (tests/support/
// EmulatedInternet), as a volunteer does when it joins (averaging/StateDownload.h over the
// donor's averaging/PeerService.h). The joiner's link is DOWN/UP Mbit/s (tc tbf); the donor's is
// a server's, 1000/1000, so the joiner's downlink is the bottleneck. Prints each repetition's
// time, the median, and "vs bound" = median / (S * 4 bytes * 8 / DOWN). `--help`: kStateUsage.
//
// Three processes of this executable: the coordinator (builds the internet, spawns the others,
// removes everything on exit, also after SIGINT or SIGTERM), the donor (--donor, in the public
// host's namespace) and the joiner (--joiner, in the volunteer's). They meet through files in a
// temporary directory: the donor writes its service endpoint, the joiner its times, the
// coordinator "done" once the joiner has finished, which ends the donor. Plaintext links (the
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
on an emulated internet (tests/support/EmulatedInternet): the donor, a PeerService holding
the state, on a public host with a 1000/1000 Mbit/s link; the joiner on a home router's LAN
behind NAT with a DOWN/UP link (tc tbf). Each repetition is a fresh download (new connection,
"state?" then one "part?" per part, one request in flight).

options (default in brackets):
  --floats S         floats in the state, 1000 or more [3900000, about the tiny run's 15 MB]
  --internet DOWN/UP the joiner's link in Mbit/s, down/up [10/2]
  --repeats R        downloads, timed one after the other [3]
  --part-floats P    the donor's part size in floats (the swarm's is 131072) [131072]
  -h, --help         print this and exit

output: a title line, one line per repetition (seconds, Mbit/s of state received), then
  median <seconds>  bound <seconds>  vs bound <median / bound>
bound: S * 4 bytes * 8 / DOWN, the state's bytes at the joiner's download rate.
Exit status: 0 after the figures, 1 if a download failed, 2 for a bad command line or
without root (network namespaces, tc, nftables).
)";

constexpr const char *kRun = "bench-state";
constexpr double kDonorMbit = 1000.0;

struct Options {
    long floats = 3'900'000;
    double downMbit = 10.0, upMbit = 2.0;
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
    writeFile(dir / "donor", service.endpoint());
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

int joinerMain(const fs::path &dir, long floats, int repeats)
{
    if (!waitForFile(dir / "donor", 60.0)) {
        std::fprintf(stderr, "bench_statedownload: the donor did not start within 60 s\n");
        return 1;
    }
    DonorAdvert donor;
    donor.peerId = "donor";
    donor.serviceEndpoint = readFile(dir / "donor");
    donor.epoch = 1;
    const std::atomic<bool> stop{false};
    std::ostringstream times;
    for (int r = 0; r < repeats; ++r) {
        std::string why;
        const auto t0 = Clock::now();
        const auto state = downloadState({donor}, kRun, 1, static_cast<std::uint64_t>(floats), {}, stop, &why);
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

// "DOWN/UP" in Mbit/s, both above 0.
void setInternet(Options &o, const std::string &text)
{
    const auto slash = text.find('/');
    char *downEnd = nullptr, *upEnd = nullptr; // strtod: GCC 10 has no floating-point from_chars
    const std::string down = text.substr(0, slash), up = slash == std::string::npos ? "" : text.substr(slash + 1);
    o.downMbit = std::strtod(down.c_str(), &downEnd);
    o.upMbit = std::strtod(up.c_str(), &upEnd);
    if (down.empty() || up.empty() || *downEnd != '\0' || *upEnd != '\0' || !(o.downMbit > 0) || !(o.upMbit > 0) ||
        o.downMbit > 1e5 || o.upMbit > 1e5)
        throw UsageError("--internet takes DOWN/UP in Mbit/s above 0, e.g. 10/2, not '" + text + "'");
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
        if (a != "--floats" && a != "--internet" && a != "--repeats" && a != "--part-floats")
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
        else
            setInternet(o, value);
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

void printFigures(const Options &o, std::vector<double> times)
{
    const double stateBits = static_cast<double>(o.floats) * 4.0 * 8.0;
    for (std::size_t r = 0; r < times.size(); ++r)
        std::printf("%-6zu %10.3f s %10.2f Mbit/s\n", r + 1, times[r], stateBits / times[r] / 1e6);
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2], bound = stateBits / (o.downMbit * 1e6);
    std::printf("median %.3f s  bound %.3f s  vs bound %.3fx\n", median, bound, median / bound);
}

// Spawns the donor and the joiner, waits for the joiner, then ends the donor. Returns the
// process exit status.
int runDownloads(const Options &o, const test::EmulatedInternet &net, int donorHost, int joinerHost)
{
    const fs::path dir = fs::temp_directory_path() / ("dedloc-statebench-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string self = selfExecutable();
    const pid_t donor = spawnIn(net.namespaceOf(donorHost), {self, "--donor", dir.string(), net.addressOf(donorHost),
                                                             std::to_string(o.floats), std::to_string(o.partFloats)});
    const pid_t joiner =
        donor > 0 ? spawnIn(net.namespaceOf(joinerHost),
                            {self, "--joiner", dir.string(), std::to_string(o.floats), std::to_string(o.repeats)})
                  : -1;
    const bool joined = joiner > 0 && waitForChildren({joiner});
    writeFile(dir / "done", "x");
    const bool donorOk = donor > 0 && waitForChildren({donor});
    const auto times = readTimes(dir / "result");
    fs::remove_all(dir);
    if (stopSignal() != 0) {
        std::fprintf(stderr, "bench_statedownload: stopped by signal %d; removing the network namespaces\n",
                     stopSignal());
        return 128 + stopSignal();
    }
    if (!joined || !donorOk || times.size() != static_cast<std::size_t>(o.repeats)) {
        std::fprintf(stderr, "bench_statedownload: the %s failed\n", joined ? "donor" : "download");
        return 1;
    }
    printFigures(o, times);
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
        const int donor = net.addPublicHost({kDonorMbit, kDonorMbit});
        const int joiner = net.addVolunteer(net.addRouter(), {o.downMbit, o.upMbit});
        std::printf("bench_statedownload: %ld floats (%.1f MB), parts of %ld floats, joiner behind NAT at %g/%g "
                    "Mbit/s, donor public at %g/%g\n",
                    o.floats, static_cast<double>(o.floats) * 4.0 / 1e6, o.partFloats, o.downMbit, o.upMbit, kDonorMbit,
                    kDonorMbit);
        std::fflush(stdout);
        if (stopSignal() != 0) // came while the internet was made; `net` removes it
            return 128 + stopSignal();
        return runDownloads(o, net, donor, joiner);
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
        if (mode == "--joiner" && argc == 5)
            return joinerMain(argv[2], std::stol(argv[3]), std::stoi(argv[4]));
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
