// The swarm at scale, simulated (sim/SimSwarm.h): N light peers in this process, with the real
// control plane, matchmaking, butterfly all-reduce and group merging on a synthetic model, for
// each N asked. Per N: steps and the share of them averaged, merged, and taken from the epoch's
// merge by peers without a complete round (GroupMerger::adopt), epochs that ended with
// one model, the time from a step's first trigger to the last peer holding its parameters, DHT
// record bytes per peer and second, open sockets per peer (the mean and the largest of samples
// taken every second), resident memory per peer, the most progress shards a peer used, and the
// progress records (and tallies) and their bytes a peer read per turn in the run's second half
// (averaging/ProgressShards.h). A benchmark measures; it asserts nothing.
//
//   bench_scale [--peers 16,64,128] [--seconds 120] [--group-size 16] [--elements 100000]
//               [--step-seconds 10] [--churn 0.1] [--speed 20] [--window 5] [--shard-capacity 64]
//
// --churn: share of the peers replaced per minute (0.1: 10 %). The target batch of each N is
// N x speed x step-seconds samples, so that a step takes about as long at every N.
// --shard-capacity: live peers before progress records go in shards (64 as in the product; a
// value above N keeps one key). With --step-seconds 1000 no step comes within a run: the control
// plane alone, as large a swarm as the machine's DHT nodes allow.
#include "SimSwarm.h"
#include "util/Clock.h"
#include "util/Log.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace dedloc;
using namespace dedloc::sim;

namespace {

struct Options {
    std::vector<std::size_t> peers = {16, 64, 128};
    double seconds = 120.0;
    std::size_t groupSize = 16;
    std::size_t elements = 100000;
    double stepSeconds = 10.0;
    double churn = 0.1;
    double speed = 20.0;
    double window = 5.0;
    int shardCapacity = DefaultShardCapacity;
};

long residentKiB()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stol(line.substr(6));
    return 0;
}

// Open sockets of this process (TCP and UDP, every peer's).
std::size_t openSockets()
{
    std::size_t n = 0;
    if (DIR *dir = opendir("/proc/self/fd")) {
        while (const auto *e = readdir(dir)) {
            char target[256] = {};
            const std::string path = std::string("/proc/self/fd/") + e->d_name;
            if (readlink(path.c_str(), target, sizeof target - 1) > 0 && std::strncmp(target, "socket:", 7) == 0)
                ++n;
        }
        closedir(dir);
    }
    return n;
}

double median(std::vector<double> v)
{
    if (v.empty())
        return 0.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

constexpr const char *Usage =
    "usage: bench_scale [--peers 16,64,128] [--seconds 120] [--group-size 16] [--elements 100000]\n"
    "                   [--step-seconds 10] [--churn 0.1] [--speed 20] [--window 5] [--shard-capacity 64]\n"
    "  --peers         swarm sizes to run, one after another\n"
    "  --seconds       length of each run\n"
    "  --group-size    averaging group size\n"
    "  --elements      elements of the synthetic model (averaged in fp16)\n"
    "  --step-seconds  about how long a global step takes (the target batch is peers x speed x this)\n"
    "  --churn         share of the peers replaced per minute (0.1: 10%)\n"
    "  --speed         median samples/s of a peer (log-normal, sigma 0.5)\n"
    "  --window        matchmaking window, seconds\n"
    "  --shard-capacity live peers before progress records go in shards (averaging/ProgressShards.h)\n";

Options parse(int argc, char **argv)
{
    Options o;
    for (int i = 1; i < argc; i += 2) {
        const std::string k = argv[i];
        if (k == "--help" || k == "-h") {
            std::fputs(Usage, stdout);
            std::exit(0);
        }
        if (i + 1 >= argc)
            throw std::runtime_error("option " + k + " needs a value");
        const std::string v = argv[i + 1];
        if (k == "--peers") {
            o.peers.clear();
            std::stringstream list(v);
            for (std::string n; std::getline(list, n, ',');)
                o.peers.push_back(std::stoul(n));
        } else if (k == "--seconds")
            o.seconds = std::stod(v);
        else if (k == "--group-size")
            o.groupSize = std::stoul(v);
        else if (k == "--elements")
            o.elements = std::stoul(v);
        else if (k == "--step-seconds")
            o.stepSeconds = std::stod(v);
        else if (k == "--churn")
            o.churn = std::stod(v);
        else if (k == "--speed")
            o.speed = std::stod(v);
        else if (k == "--window")
            o.window = std::stod(v);
        else if (k == "--shard-capacity")
            o.shardCapacity = std::stoi(v);
        else
            throw std::runtime_error("unknown option " + k);
    }
    return o;
}

void runOne(const Options &o, std::size_t n)
{
    const long baseKiB = residentKiB();
    const std::size_t baseSockets = openSockets();
    SimSwarmConfig c;
    c.peers = n;
    c.peer.runId = "scale-" + std::to_string(n);
    c.peer.elements = o.elements;
    c.peer.samplesPerSecond = o.speed;
    c.peer.targetBatchSize = static_cast<long>(static_cast<double>(n) * o.speed * o.stepSeconds);
    c.peer.matchmaking.window = o.window;
    c.peer.matchmaking.targetGroupSize = o.groupSize;
    c.peer.shardCapacity = o.shardCapacity;
    c.churnPerMinute = o.churn;
    SimSwarm swarm(c);
    const double started = unixNow();
    swarm.start();
    const double startSeconds = unixNow() - started;
    // Open sockets sampled every second: a member holds one per other reducer during a round and
    // closes them after it, so one sample says mostly whether a round was running then.
    double socketSum = 0.0, socketMax = 0.0;
    long socketSamples = 0;
    const auto sampleSockets = [&] {
        const double s = static_cast<double>(openSockets() - baseSockets);
        socketSum += s;
        socketMax = std::max(socketMax, s);
        ++socketSamples;
    };
    swarm.run(o.seconds / 2, sampleSockets);
    const double kib = static_cast<double>(residentKiB() - baseKiB);
    const auto readsAtHalf = swarm.progressReadTotals();
    swarm.run(o.seconds / 2, sampleSockets);
    // Progress reads of the second half only: the first holds the changes of K (both keys read).
    const auto readsAtEnd = swarm.progressReadTotals();
    const double turns = std::max(1.0, static_cast<double>(readsAtEnd.turns - readsAtHalf.turns));
    const double sockets = socketSamples ? socketSum / static_cast<double>(socketSamples) : 0.0;
    swarm.stop();
    const auto r = swarm.report();
    std::size_t stepped = 0, alone = 0, merged = 0, adopted = 0, oneModel = 0, full = 0, counted = 0;
    std::vector<double> latency;
    for (const auto &[epoch, e] : r.epochs) {
        if (e.afterStop > 0)
            continue; // cut by the end of the run: its rounds and merges were stopped
        ++counted;
        stepped += e.stepped;
        alone += e.alone;
        merged += e.merged;
        adopted += e.adopted;
        oneModel += e.digests == 1 ? 1 : 0;
        if (e.stepped * 10 >= n * 9) {
            ++full;
            latency.push_back(e.triggerToAll);
        }
    }
    std::printf("| %zu | %.0f | %zu | %zu (%zu by >= 90%%) | %.3f | %.3f | %.3f | %zu/%zu | %.2f | %.0f | %.1f / %.1f "
                "| %.1f | %zu/%zu | %ld | %d | %.1f | %.0f |\n",
                n, startSeconds, c.peers <= o.groupSize ? std::size_t{1} : (n + o.groupSize - 1) / o.groupSize, counted,
                full, stepped ? 1.0 - double(alone) / double(stepped) : 0.0,
                stepped ? double(merged) / double(stepped) : 0.0, stepped ? double(adopted) / double(stepped) : 0.0,
                oneModel, counted, median(latency), r.recordBytesPerPeerSecond, sockets / double(n),
                socketMax / double(n), kib / 1024.0 / double(n), r.joins - n, r.leaves - n, r.stateDownloads, r.shardCount,
                (readsAtEnd.records - readsAtHalf.records) / turns, (readsAtEnd.bytes - readsAtHalf.bytes) / turns);
    std::string detail;
    for (const auto &[epoch, e] : r.epochs) {
        detail += ' '; // appended piece by piece: GCC 12 warns falsely (-Wrestrict) on " " + ...
        detail += std::to_string(epoch);
        const std::size_t fields[] = {e.stepped, e.merged,  e.adopted,   e.alone,
                                      e.starts,  e.digests, e.afterStop, e.leaving};
        for (std::size_t k = 0; k < std::size(fields); ++k) {
            detail += k == 0 ? ':' : '/';
            detail += std::to_string(fields[k]);
        }
    }
    std::fprintf(
        stderr,
        "N=%zu epochs (epoch:stepped/merged/took the merge/alone/models before/after/after the stop/leaving):%s\n", n,
        detail.c_str());
    for (const auto &[epoch, e] : r.epochs)
        for (const auto &stray : e.strays)
            std::fprintf(stderr, "N=%zu epoch %ld stray: %s\n", n, epoch, stray.c_str());
    std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv)
{
    try {
        const auto o = parse(argc, argv);
        log::setMinimumLevel(log::Level::Warning);
        std::printf("group size %zu, %zu elements (fp16), %.0f samples/s a peer (log-normal, sigma 0.5), "
                    "a step of about %.0f s, churn %.0f%% a minute, %.0f s a run\n\n",
                    o.groupSize, o.elements, o.speed, o.stepSeconds, o.churn * 100, o.seconds);
        std::printf("| peers | start s | groups (at least) | epochs | averaged | merged | took the merge | one model | median trigger-to-all s "
                    "| DHT record B/s per peer | sockets per peer (mean / max) | RSS MiB per peer | joins/leaves (churn) | state downloads "
                    "| shards | progress records read a turn (2nd half) | progress bytes read a turn (2nd half) |\n"
                    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (const auto n : o.peers)
            runOne(o, n);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_scale: %s\n", e.what());
        return 2;
    }
    return 0;
}
