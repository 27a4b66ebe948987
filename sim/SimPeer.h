#pragma once
// A light peer of the swarm simulator (tests and bench/bench_scale): the swarm's real control
// plane and averaging on a synthetic model, so that one machine holds tens to hundreds of peers.
//   real:      signed progress records on the peer's own OpenDHT node and a ProgressTracker
//              (the step trigger), Matchmaker and PeerService (groups of
//              MatchmakingOptions::targetGroupSize), the butterfly all-reduce, GroupMerger (the
//              epoch's groups merged into one sealed set; a peer without a complete round takes
//              that merge), state download from a donor (a joiner, or a peer the swarm stepped
//              past);
//   synthetic: the model is `elements` floats; a peer's gradient at an epoch is drawn from its
//              seed and the epoch; computing a micro-batch is sleeping microBatch /
//              samplesPerSecond seconds; the step is params -= learningRate x averaged gradient.
// Peers that averaged the same gradients therefore hold bitwise identical parameters: each keeps
// the SHA-256 of its parameters after every step (SimStep::paramsDigest). No libtorch.
// Threads: a worker (compute and steps) and a control thread (records) per peer, besides those of
// its DHT node, service socket, all-reduce endpoint and matchmaking. Public calls are
// thread-safe. Errors: the constructor and start() throw dedloc::Error when a socket cannot bind.
// File descriptors: OpenDHT's receive loop uses select(), which aborts the process on a
// descriptor of 1024 or more; the constructor makes only the DHT node, start() the rest (about 15
// descriptors of ZeroMQ), so that a simulator can hand each node low descriptors
// (sim/LowDescriptors.h) whenever the peer joins.
#include "averaging/Matchmaker.h"
#include "averaging/ProgressShards.h"
#include "compress/Compression.h"
#include "net/DhtNode.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dedloc::sim {

struct SimPeerConfig {
    std::string runId = "sim";
    std::size_t elements = 100000;  // parameters of the synthetic model
    long targetBatchSize = 1024;    // samples per global step
    int microBatch = 16;            // samples per simulated micro-batch
    double samplesPerSecond = 50.0; // this peer's simulated throughput
    double progressPeriod = 1.0;    // seconds (base), and the adaptive period's maximum
    double maxProgressPeriod = 5.0;
    MatchmakingOptions matchmaking; // window, request timeout, target group size
    Compression codec = Compression::Fp16;
    std::string bootstrap;          // "127.0.0.1:port" of a DHT node; "" for the first peer
    std::uint64_t seed = 1;         // draws this peer's gradients
    float learningRate = 0.01F;
    int shardCapacity = DefaultShardCapacity; // live peers before progress records go in shards
};

// One step a peer applied.
struct SimStep {
    long epoch = 0;              // the step was taken at this epoch (the parameters are now at epoch + 1)
    double decidedAt = 0.0;      // Unix seconds: the tracker said Step
    double appliedAt = 0.0;      // Unix seconds: the parameters were updated
    std::size_t groupSize = 1;   // 1: no group (stepped alone)
    std::size_t mergedGroups = 1;
    std::size_t mergedPeers = 0;
    bool complete = false;       // every shard's average arrived
    bool adopted = false;        // without a complete round, it took the epoch's merge (GroupMerger::adopt)
    bool leaving = false;        // applied while the peer was stopping: its waits were cut short, and
                                 // the parameters leave with it
    std::string startDigest;     // SHA-256 of the parameters the step started from
    std::string paramsDigest;    // SHA-256 of the parameters after the step
};

class SimPeer final {
public:
    explicit SimPeer(SimPeerConfig config);
    ~SimPeer(); // stops
    SimPeer(const SimPeer &) = delete;
    SimPeer &operator=(const SimPeer &) = delete;

    void start();
    // Leaves the swarm at once (its records expire); returns once its threads ended.
    void stop();
    // Asks the peer to stop and returns at once: many peers stop together (stop() then joins).
    void requestStop();

    [[nodiscard]] const std::string &peerId() const;
    [[nodiscard]] std::uint16_t dhtPort() const;
    [[nodiscard]] long epoch() const;
    [[nodiscard]] std::vector<SimStep> steps() const;
    [[nodiscard]] DhtNode::RecordTraffic dhtTraffic() const;
    [[nodiscard]] long stateDownloads() const;
    // Its progress reads so far: turns, records and tallies read (every copy), their bytes as
    // stored, and the shards its swarm view uses now (averaging/ProgressShards.h).
    struct ProgressReads {
        long turns = 0;
        double records = 0.0, bytes = 0.0;
        int shardCount = 1;
    };
    [[nodiscard]] ProgressReads progressReads() const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace dedloc::sim
