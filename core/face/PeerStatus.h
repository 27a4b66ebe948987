#pragma once
// What a running peer shows to the world: a plain snapshot of its state, copied out under a
// mutex by PeerControl::snapshot(). Torch-free, Qt-free; the UI turns it into item models and the
// headless app into one status line per interval.
//
// Units: samples (training sequences), seconds, samples per second. Epoch = global optimizer
// step (DeDLOC section 3.1: the swarm's step counter).
#include "averaging/PeerRole.h"
#include "face/Contribution.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dedloc {

// The volunteer-facing state machine (docs/ARCHITECTURE.md "The face").
enum class PeerState {
    Idle,        // not joined yet
    Connecting,  // bootstrapping the DHT, looking for the swarm
    Syncing,     // downloading parameters and optimizer state from a state donor
    Training,    // computing gradients toward the global batch
    Averaging,   // matchmaking or all-reduce for a global step
    Paused,      // by the user or the auto-pause policy (stateDetail says why)
    Error,       // stopped; stateDetail says what happened and what to do
    Stopped,     // left the swarm cleanly
};

[[nodiscard]] const char *peerStateName(PeerState state);  // "Training", ...

// One other peer, as its latest progress record describes it.
struct SwarmPeerInfo {
    std::string peerId;            // hex of the Ed25519 public key (first 16 characters shown)
    PeerRole role = PeerRole::Trainer;
    bool clientMode = false;       // behind NAT: connects out only, reduces no shard
    bool paused = false;           // paused peers' samples do not count
    long epoch = 0;
    long samplesAccumulated = 0;   // toward the current global batch
    double samplesPerSecond = 0.0;
    double secondsSinceReport = 0.0;
    bool averages = true;          // joins averaging groups (a monitor only when it reduces shards)
};

struct LossPoint {
    long epoch = 0;     // global step
    double loss = 0.0;  // mean masked-LM loss of that step's batch (nats)
};

struct PeerSnapshot {
    std::uint64_t sequence = 0;   // increases with every change; lets consumers skip repeats
    PeerState state = PeerState::Idle;
    std::string stateDetail;      // Paused: the reason; Error: what happened and what to do
    PeerRole role = PeerRole::Trainer;
    std::string peerId;
    std::string runId;
    std::string runName;
    // Closed runs: when this peer's access token stops being accepted (Unix seconds); 0: an open
    // run, or not known.
    double accessTokenExpiresAt = 0.0;
    std::string deviceName;       // "cpu (2 threads)", "cuda:0 NVIDIA ..."

    long localEpoch = 0;
    long globalEpoch = 0;
    long targetBatchSize = 0;               // samples per global step (manifest)
    double swarmSamplesAccumulated = 0.0;   // toward the current global step, extrapolated
    double swarmSamplesPerSecond = 0.0;
    double etaSeconds = -1.0;               // to the next global step; < 0 unknown
    double localSamplesPerSecond = 0.0;
    int trainers = 0, auxiliaries = 0, monitors = 0, clientModePeers = 0;  // live peers by role
    // Peers of this run on another version of its manifest (averaging/ManifestVersions.h):
    // neither counted above nor averaged with.
    int otherVersionPeers = 0;
    std::vector<SwarmPeerInfo> peers;

    ContributionTotals session;   // since this process joined
    ContributionTotals allTime;   // kept across restarts (checkpointed)
    MonitorCredit monitorCredit;  // what a monitor recorded of this peer (trainers; empty until one answers)
    OwnCreditCount ownCredit;     // this peer's own count over the monitor's steps
    std::string contributionRecord; // this peer's per-step record (CSV: step,time,samples,loss); "" none
    double shareOfSwarm = 0.0;    // this peer's samples / all samples of the global steps it saw
    // Share of wall time this trainer spent computing over its last steps (face/
    // ComputeUtilisation.h), in [0, 1]; < 0 unknown (no step yet, or not a trainer).
    double computeUtilisation = -1.0;

    double lastLoss = -1.0;       // < 0: none yet
    std::vector<LossPoint> lossHistory;  // last <= 512 global steps, oldest first
    std::string lastRoundStatus;  // "averaged with 3 peers (1.2 s)", "fell back to local gradients: ..."
    // Whether other peers can connect to this one, and why it is believed: "reachable: peer
    // 1a2b3c4d connected back to tcp://...", "client mode: other peers cannot connect to this
    // machine (...)", "client mode (--client-mode): ..."; empty before the swarm is joined.
    std::string reachability;
};

} // namespace dedloc
