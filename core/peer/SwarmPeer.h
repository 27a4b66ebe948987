#pragma once
// A peer of a DeDLOC swarm: the collaborative training loop (Diskin et al. 2021, section 3;
// docs/PROTOCOL.md) behind the PeerControl interface that the window, the headless app and the tests
// drive.
//
// Roles (docs/PROTOCOL.md "Roles"):
//  - trainer: accumulates micro-batches toward the global target batch; when the swarm's
//    progress reaches it (averaging/ProgressTracker.h), joins a group (averaging/Matchmaker.h, started
//    shortly before the expected step so the group is ready), averages its mean gradient with
//    the butterfly all-reduce weighted by samples, and applies LAMB to the average. Without a
//    group it steps on its own gradient and says so. Every `averageStateEvery` epochs the group
//    also averages parameters and optimizer state (undoes drift after failed rounds or lossy
//    compression). A trainer behind the global epoch downloads the state from a donor.
//  - auxiliary: reachable, trains nothing; joins groups with weight 0 and reduces shards.
//  - monitor: trains and averages nothing; bootstrap node of the DHT, records every peer's
//    metrics (JSON lines), keeps the latest state (downloaded every `monitorStateEvery` epochs,
//    checkpointed) and serves it as the state donor of last resort.
// Reachable peers bind two ROUTERs on `host` (all-reduce and service); client-mode peers bind
// nothing, never lead and reduce no shard. Every data-plane link is CurveZMQ; in a closed run
// (manifest "access": "closed") the peer needs its access token and the others' tokens admit
// them at the handshake (peer/RunAccess.h). A peer whose own token is missing or invalid ends
// in PeerState::Error with "this run is closed: ..." before it trains anything.
//
// Threads: a worker thread (compute, matchmaking, rounds, state download) and a control thread
// (DHT: progress records every `progressPeriod`, donor adverts, metrics). PeerControl methods
// are thread-safe and return at once except stop(), which joins both threads.
// Errors: bad input (manifest, corpus, checkpoint) ends the worker in PeerState::Error with the
// reason in the snapshot; wait() then returns 2.
#include "averaging/Matchmaker.h"
#include "averaging/SwarmMessages.h"
#include "security/Minisign.h"
#include "face/PeerControl.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dedloc {

class SwarmMetricsRecorder;

struct SwarmOptions {
    std::filesystem::path manifest;           // required
    std::filesystem::path dataDir;            // identity.key, checkpoints in runs/<run id>/
    std::string name;                         // shown in status lines ("trainer-1")
    PeerRole role = PeerRole::Trainer;
    std::vector<std::string> bootstrap;       // "host:port" of DHT nodes (the monitor's)
    std::uint16_t dhtPort = 0;                // 0: ephemeral
    std::string host = "127.0.0.1";           // IPv4 address the ROUTERs and the DHT (UDP) bind, and the
                                              // ROUTERs advertise; 0.0.0.0 only in client mode
    // TCP ports of the all-reduce ROUTER and of the service ROUTER (group joins, state
    // downloads); 0: any free port. Fixed ports are what a firewall rule or a router's port
    // forward names (`dedloc --port P` binds P and P + 1). Unused in client mode (nothing bound).
    std::uint16_t allReducePort = 0;
    std::uint16_t servicePort = 0;
    bool clientMode = false;                  // behind NAT: connect out only
    // Reachable through a port forward: "HOST" or "HOST:PORT" advertised instead of the bound
    // address (net/Announce.h); then `host` may be 0.0.0.0. Empty: advertise what is bound.
    std::string announce;
    // Without `announce`, a reachable peer bound on a private LAN address asks the router for
    // port mappings (net/PortMapping: UPnP-IGD, then NAT-PMP) and advertises the router's
    // external address and ports; removed when the peer stops. false: never ask.
    bool mapPorts = true;
    // At start, ask up to three reachable peers to connect back (averaging/Reachability.h); a
    // trainer they cannot reach runs in client mode. false: trust the configuration.
    bool checkReachability = true;
    double bandwidth = -1.0;                  // declared for shard sizes; < 0 unknown
    int threads = 0;                          // torch threads; 0: all cores
    bool allowCuda = true;
    std::vector<int> gpus = {0};              // the GPUs to train on at start (ResourceCaps::gpus)
    int microBatchSize = 0;                   // 0: the manifest's
    std::uint64_t dataSeed = 0;               // 0: derived from the peer key
    std::filesystem::path metricsOut;         // this peer's JSON lines (docs/METRICS.md)
    std::filesystem::path swarmMetricsOut;    // monitor: every peer's metrics as JSON lines
    std::shared_ptr<SwarmMetricsRecorder> swarmRecorder; // monitor: records instead of one made
                                              // from swarmMetricsOut (dedloc-lead serve: + CSV)
    std::filesystem::path checkpointArchive;  // monitor: keep a copy per state refresh here
    int keepCheckpoints = 5;                  // monitor: archived copies kept (oldest removed)
    bool resume = true;                       // restore the newest checkpoint
    long maxEpoch = 0;                        // stop at this epoch (0: schedule.total_steps)
    double durationSeconds = 0.0;             // stop after this wall time (0: no limit)
    double progressPeriod = 1.0;              // seconds between progress records near a step
    // The longest wait between progress records while the next step is far
    // (averaging/ProgressPacing.h adaptiveProgressPeriod); 0: 10 x progressPeriod; equal to
    // progressPeriod: a fixed period.
    double maxProgressPeriod = 0.0;
    MatchmakingOptions matchmaking;
    double senderTimeout = 15.0;              // seconds (reference default)
    double reducerTimeout = 30.0;             // seconds (reference default)
    long averageStateEvery = 10;              // epochs; 0: never
    std::size_t minPeers = 1;                 // neither compute nor step before this many peers (once)
                                              // (trainers and auxiliaries, this one included) are
                                              // at the epoch
    long monitorStateEvery = 5;               // epochs between the monitor's kept states
    // Monitor: also join averaging groups as a reducer with weight 0, as an auxiliary peer does,
    // so that client-mode trainers have a leader and a reducer; the state rounds then hand it
    // the swarm's state (no download needed). dedloc-lead serve sets it unless --no-reduce.
    bool monitorReduces = false;
    long checkpointEvery = 0;                 // epochs; 0: the manifest's checkpoint interval
    // Monitor: fine-tune the saved state on a downstream task every N epochs
    // (peer/DownstreamMonitor.h); 0: the manifest's evaluation.every_n_steps (absent: never).
    long evaluateEvery = 0;
    std::filesystem::path evaluationTask;     // empty: defaultEvaluationTask (run/RunPaths.h)
    bool hashParameters = false;              // "params_sha" in step metrics (tests, audits)
    std::filesystem::path dumpParameters;     // at exit: raw fp32 parameters (tests)
    std::FILE *statusOut = stdout;            // one line per step; nullptr: none
    // Closed runs: the key that verified the manifest (security/RunTrust.h) signs the tokens.
    std::optional<minisign::PublicKey> leadKey;
    std::filesystem::path accessTokenFile;    // empty: <data dir>/runs/<run id>/access.token
    // Tests only: rewrites this trainer's mean gradient before each round, as a hostile peer
    // would (tests/hostile/HostilePeer.cpp). The apps never set it.
    std::function<void(std::span<float>)> tamperGradient;
    // Tests only: rewrites this trainer's progress record before its own tracker counts it and the
    // DHT carries it (a peer that lies about its samples and rate). The apps never set it.
    std::function<void(ProgressRecord &)> tamperRecord;
    // Tests only: rewrites the bandwidth this peer declares when it joins or leads a group (its
    // measured upload rate, else `bandwidth`), as a peer lying about its link would.
    std::function<double(double)> tamperBandwidth;
    // Tests only: rewrites each block of the gradient average this peer's reducer computes before
    // it is returned (a reducer lying about its shard's result: AllReduceOptions::tamperAverage).
    std::function<void(std::span<float>)> tamperAverage;
    // Tests only: rewrites each PART of this peer's gradient rounds after encoding, its weight and
    // its payload (AllReduceOptions::tamperPart).
    std::function<void(double &, std::span<std::uint8_t>)> tamperPart;
    // Tests only: rewrites each state part this peer serves as a donor (PeerService::setPartTamper),
    // while its records and offers name its true state.
    std::function<void(std::span<float>)> tamperServedState;
    // Tests only: publishes none of its check records (a reducer hiding its view from the result
    // check: MergeOptions::publishChecks).
    bool withholdChecks = false;
};

// Why other peers could not reach this one at the addresses `options` would advertise, or ""
// when they could: a reachable peer (not in client mode) without `announce` advertises what it
// binds, and 0.0.0.0 is nobody's address; `announce` has no use in client mode; a peer bound to
// loopback (127.x, the default) cannot join a bootstrap node on another machine. SwarmPeer
// refuses such options when it starts (PeerState::Error); a command line checks them earlier.
[[nodiscard]] std::string advertisingProblem(const SwarmOptions &options);

class SwarmPeer final : public PeerControl {
public:
    explicit SwarmPeer(SwarmOptions options);
    ~SwarmPeer() override;  // stop()
    SwarmPeer(const SwarmPeer &) = delete;
    SwarmPeer &operator=(const SwarmPeer &) = delete;

    void start() override;
    void pause(const std::string &reason) override;
    void resume() override;
    void stop() override;
    void setCaps(const ResourceCaps &caps) override;
    [[nodiscard]] PeerSnapshot snapshot() const override;

    // Blocks until the worker ends by itself (duration, max epoch, error) or stop() is called.
    // Returns 0 for a normal end, 2 for bad input.
    int wait();
    // The DHT's UDP port once connected (0 before).
    [[nodiscard]] std::uint16_t dhtPort() const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace dedloc
