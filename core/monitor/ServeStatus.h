#pragma once
// The read-only status documents of `dedloc-lead serve` (docs/METRICS.md "Status JSON"):
// GET /status (the swarm at a glance) and GET /peers (one entry per live peer). Built from
// plain values — the monitor's PeerSnapshot, the metrics recorder's counters, the checkpoint
// archive's listing — so that the schema is tested without a swarm or a socket.
//
// Schema versions: "dedloc-status/1", "dedloc-peers/1". Later versions add fields; readers
// ignore fields they do not know. Units: seconds, samples, samples per second, bytes; times
// are Unix seconds. A value that is not known yet is null, never a made-up number.
#include "monitor/CheckpointArchive.h"
#include "face/PeerStatus.h"
#include "monitor/SwarmMetricsRecorder.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace dedloc {

struct ServeStatusInput {
    PeerSnapshot snapshot;   // the monitor's own view of the swarm
    double now = 0.0;        // Unix seconds
    double startedAt = 0.0;  // Unix seconds
    std::string version;     // of dedloc-lead
    std::string name;        // the monitor's display name
    std::string dhtEndpoint; // "host:port" volunteers bootstrap from
    std::filesystem::path metricsJsonLines, metricsCsv, evaluationCsv;
    RecorderStats metrics;
    std::map<std::string, nlohmann::json> latestMetrics; // per peer id (SwarmMetricsRecorder)
    std::vector<ArchivedCheckpoint> checkpoints;         // oldest first
    nlohmann::json latestEvaluation;                     // SwarmMetricsRecorder; null: none yet
    long evaluateEveryNSteps = 0;                        // 0: the monitor evaluates nothing
    int keepCheckpoints = 0;
};

[[nodiscard]] nlohmann::json serveStatusJson(const ServeStatusInput &in);
[[nodiscard]] nlohmann::json servePeersJson(const ServeStatusInput &in);

} // namespace dedloc
