#include "monitor/ServeStatus.h"

#include <algorithm>

namespace dedloc {

namespace {

nlohmann::json orNull(double value, bool known)
{
    return known ? nlohmann::json(value) : nlohmann::json(nullptr);
}

nlohmann::json orNull(const std::string &value)
{
    return value.empty() ? nlohmann::json(nullptr) : nlohmann::json(value);
}

// The fields of a peer's latest step metrics that a dashboard shows beside its progress.
nlohmann::json metricField(const std::map<std::string, nlohmann::json> &latest, const std::string &peerId,
                           const char *field)
{
    const auto it = latest.find(peerId);
    if (it == latest.end() || !it->second.is_object() || !it->second.contains(field))
        return nullptr;
    return it->second.at(field);
}

} // namespace

nlohmann::json serveStatusJson(const ServeStatusInput &in)
{
    const auto &s = in.snapshot;
    int paused = 0;
    for (const auto &p : s.peers)
        paused += p.paused ? 1 : 0;
    nlohmann::json checkpoints = nlohmann::json::array();
    for (const auto &c : in.checkpoints)
        checkpoints.push_back(
            {{"epoch", c.epoch}, {"file", c.file.filename().string()}, {"bytes", c.bytes}, {"time", c.modified}});
    const bool haveTarget = s.targetBatchSize > 0;
    return {
        {"schema", "dedloc-status/1"},
        {"time", in.now},
        {"run",
         {{"id", orNull(s.runId)},
          {"name", orNull(s.runName)},
          {"target_batch_size", haveTarget ? nlohmann::json(s.targetBatchSize) : nlohmann::json(nullptr)}}},
        {"monitor",
         {{"peer_id", orNull(s.peerId)},
          {"name", orNull(in.name)},
          {"state", peerStateName(s.state)},
          {"state_detail", orNull(s.stateDetail)},
          {"dht", orNull(in.dhtEndpoint)},
          {"version", in.version},
          {"started_at", in.startedAt},
          {"uptime_s", std::max(0.0, in.now - in.startedAt)}}},
        {"swarm",
         {{"global_epoch", s.globalEpoch},
          {"samples_accumulated", s.swarmSamplesAccumulated},
          {"progress",
           orNull(s.swarmSamplesAccumulated / static_cast<double>(std::max(1L, s.targetBatchSize)), haveTarget)},
          {"samples_per_s", s.swarmSamplesPerSecond},
          {"eta_s", orNull(s.etaSeconds, s.etaSeconds >= 0.0)},
          {"peers",
           {{"total", s.peers.size()},
            {"trainers", s.trainers},
            {"auxiliaries", s.auxiliaries},
            {"monitors", s.monitors},
            {"client_mode", s.clientModePeers},
            {"paused", paused}}}}},
        {"state",
         {{"epoch", s.localEpoch},
          {"keep", in.keepCheckpoints},
          {"latest_checkpoint", in.checkpoints.empty() ? nlohmann::json(nullptr) : checkpoints.back()},
          {"checkpoints", checkpoints}}},
        {"metrics",
         {{"jsonl", orNull(in.metricsJsonLines.string())},
          {"csv", orNull(in.metricsCsv.string())},
          {"rows", in.metrics.rows},
          {"csv_rows", in.metrics.csvRows},
          {"peers_recorded", in.metrics.peers},
          {"last_recorded_at", orNull(in.metrics.lastRecordedAt, in.metrics.lastRecordedAt > 0.0)},
          {"last_error", orNull(in.metrics.lastError)}}},
        {"evaluation",
         {{"every_n_steps", in.evaluateEveryNSteps > 0 ? nlohmann::json(in.evaluateEveryNSteps) : nlohmann::json()},
          {"csv", orNull(in.evaluationCsv.string())},
          {"latest", in.latestEvaluation}}},
    };
}

nlohmann::json servePeersJson(const ServeStatusInput &in)
{
    auto peers = in.snapshot.peers;
    std::sort(peers.begin(), peers.end(), [](const SwarmPeerInfo &a, const SwarmPeerInfo &b) {
        return a.role != b.role ? a.role < b.role : a.peerId < b.peerId;
    });
    nlohmann::json list = nlohmann::json::array();
    for (const auto &p : peers) {
        const bool self = p.peerId == in.snapshot.peerId;
        auto name = metricField(in.latestMetrics, p.peerId, "name");
        if (self && !in.name.empty())
            name = in.name;
        list.push_back({{"peer_id", p.peerId},
                        {"name", name},
                        {"role", peerRoleName(p.role)},
                        {"client_mode", p.clientMode},
                        {"paused", p.paused},
                        {"epoch", p.epoch},
                        {"samples_accumulated", p.samplesAccumulated},
                        {"samples_per_s", p.samplesPerSecond},
                        {"seconds_since_report", p.secondsSinceReport},
                        {"last_step", metricField(in.latestMetrics, p.peerId, "step")},
                        {"loss", metricField(in.latestMetrics, p.peerId, "loss")},
                        {"last_step_at", metricField(in.latestMetrics, p.peerId, "time")}});
    }
    return {{"schema", "dedloc-peers/1"}, {"time", in.now}, {"global_epoch", in.snapshot.globalEpoch}, {"peers", list}};
}

} // namespace dedloc
