#pragma once
// The swarm simulator (sim/SimPeer.h): N light peers in one process on loopback, throughputs
// drawn from a log-normal distribution, and churn (peers leaving and fresh ones joining at a
// rate); what every step did, summed up per epoch. For tests (tst_swarmsim) and bench/bench_scale.
// Threads: run() on the caller's thread; each peer runs its own.
#include "LowDescriptors.h"
#include "SimPeer.h"

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace dedloc::sim {

struct SimSwarmConfig {
    std::size_t peers = 16;
    SimPeerConfig peer;            // every peer's settings; seed, throughput and bootstrap are set per peer
    double speedSpread = 0.5;      // sigma of the log-normal throughput around peer.samplesPerSecond
    double churnPerMinute = 0.0;   // share of the peers replaced per minute (a leave, then a fresh join)
    std::uint64_t seed = 1;
};

// One epoch as the peers that stepped at it saw it. A step a peer applied while it was leaving
// (SimStep::leaving) is counted in `leaving` only: no peer holds its parameters afterwards.
struct SimEpoch {
    std::size_t leaving = 0;       // steps applied by peers while they were leaving
    std::size_t stepped = 0;       // peers that applied a step at this epoch (not leaving)
    std::size_t alone = 0;         // ... on its own gradient (no group, and no merge to take)
    std::size_t adopted = 0;       // ... without a complete round, taking the epoch's merge
    std::size_t merged = 0;        // ... merging several groups
    std::size_t afterStop = 0;     // ... after stop() began: the run's end cut its round or waits short
    std::size_t digests = 0;       // distinct parameters after it (1: one model)
    std::size_t starts = 0;        // distinct parameters it started from (1: every stray repaired)
    std::size_t fromCommonStart = 0; // steps that started from the parameters most of them started from
    double triggerToAll = 0.0;     // seconds from the first Step decision to the last applied step
    // The steps that did not end on the parameters most peers hold after it, as "<peer id, 8>
    // group <n> merged <groups> [took the merge] [incomplete] [other start] [after the stop]":
    // which kind of step strayed (bench_scale prints it).
    std::vector<std::string> strays;
};

struct SimReport {
    std::map<long, SimEpoch> epochs;
    std::size_t joins = 0, leaves = 0;
    long stateDownloads = 0;
    double recordBytesPerPeerSecond = 0.0; // DHT record bytes put and got, per peer-second alive
    int shardCount = 1; // the most progress shards a peer used when it left (SimPeer::progressReads)
};

class SimSwarm final {
public:
    explicit SimSwarm(SimSwarmConfig config);
    ~SimSwarm();
    // Starts the peers (each bootstraps from the first one), `stagger` seconds apart.
    void start(double stagger = 0.02);
    // Runs for `seconds`, replacing peers at the churn rate; returns at the end. `everySecond`
    // (optional) is called about once a second meanwhile, on this thread (a benchmark's samples).
    void run(double seconds, const std::function<void()> &everySecond = {});
    // Runs at least `minSeconds`, then on until `share` of the live peers hold parameters at
    // `epoch` or later (they stepped every epoch before it), at most `maxSeconds` in all; returns
    // whether they got there. A run measured in epochs, not seconds: a loaded machine's slower
    // epochs do not cut the run short of them.
    bool runUntilEpoch(long epoch, double share, double minSeconds, double maxSeconds);
    // Every peer's progress reads so far (SimPeer::progressReads), departed ones included, summed:
    // a benchmark takes the difference between two moments.
    [[nodiscard]] SimPeer::ProgressReads progressReadTotals() const;
    // The live peers' own progress reads (their shards now among them).
    [[nodiscard]] std::vector<SimPeer::ProgressReads> liveProgressReads() const;
    // Stops every peer; report() reads the steps of all peers, departed ones included.
    void stop();
    [[nodiscard]] SimReport report() const;
    [[nodiscard]] std::size_t live() const { return m_live.size(); }

private:
    struct Member;
    Member make();
    void describeStrays(SimReport &r) const;
    [[nodiscard]] bool afterStop(const SimStep &s) const { return m_stopBegan > 0 && s.appliedAt >= m_stopBegan; }
    void join();
    void leaveOne();
    struct Member {
        std::unique_ptr<SimPeer> peer;
        double joinedAt = 0.0, leftAt = 0.0;
    };
    SimSwarmConfig m_config;
    LowDescriptors m_low{900};     // for the DHT nodes of joiners (LowDescriptors.h)
    double m_stopBegan = 0.0;      // Unix seconds; 0 before stop()
    double m_nextChurn = 0.0;      // Unix seconds of the next leave and join; 0 before run()
    std::mt19937_64 m_random;
    std::vector<Member> m_live, m_departed;
    std::uint64_t m_nextSeed = 1;
    std::size_t m_joins = 0;
};

} // namespace dedloc::sim
