#include "monitor/SwarmMetricsRecorder.h"

#include <algorithm>

#include "util/Clock.h"
#include "util/Log.h"

#include <algorithm>

namespace dedloc {

SwarmMetricsRecorder::SwarmMetricsRecorder(const std::filesystem::path &jsonLines, const std::filesystem::path &csv,
                                           const std::filesystem::path &evaluationCsv)
{
    if (!csv.empty())
        m_csv = std::make_unique<MetricsCsvWriter>(csv);
    if (!evaluationCsv.empty())
        m_evaluationCsv = std::make_unique<MetricsCsvWriter>(evaluationCsv, evaluationCsvColumns());
    m_json.open(jsonLines, "the swarm's metrics");
}

SwarmMetricsRecorder::~SwarmMetricsRecorder() = default;

bool SwarmMetricsRecorder::writeJsonLine(const std::string &line)
{
    if (m_json.append(line))
        return true;
    if (m_stats.lastError != m_json.lastError())
        log::error("monitor", m_json.lastError() + "; will try again");
    m_stats.lastError = m_json.lastError();
    return false;
}

int SwarmMetricsRecorder::record(const std::vector<SignedRecord> &records)
{
    int written = 0;
    const double now = unixNow();
    std::lock_guard lock(m_mutex);
    for (const auto &r : records) {
        if (r.payload.size() > MaxMetricsRecordBytes) {
            log::warning("monitor", "skipped a metrics record of " + r.peerId.substr(0, 8) + ": "
                                        + std::to_string(r.payload.size()) + " bytes, above the bound of "
                                        + std::to_string(MaxMetricsRecordBytes));
            continue;
        }
        if (m_latest.size() >= MaxRecordedPeers && !m_latest.count(r.peerId) && !m_lastCsvStep.count(r.peerId)) {
            log::warning("monitor", "skipped a metrics record of " + r.peerId.substr(0, 8) + ": already "
                                        + std::to_string(MaxRecordedPeers) + " peers recorded");
            continue;
        }
        auto j = nlohmann::json::parse(r.payload, nullptr, false);
        if (j.is_discarded() || !j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) {
            log::warning("monitor", "skipped a metrics record of " + r.peerId.substr(0, 8) + ": not step metrics");
            continue;
        }
        const long step = j["step"].get<long>();
        auto newer = [&](const std::map<std::string, long> &last) {
            const auto it = last.find(r.peerId);
            return it == last.end() || it->second < step;
        };
        const bool jsonDue = newer(m_lastJsonStep);
        const bool csvDue = m_csv && newer(m_lastCsvStep);
        if (!jsonDue && !csvDue)
            continue;
        j["peer_id"] = r.peerId; // the verified signer, whatever the payload claims
        j["recorded_at"] = now;
        if (jsonDue && writeJsonLine(j.dump() + "\n")) {
            m_lastJsonStep[r.peerId] = step;
            creditSteps(r.peerId, step, j);
            m_latest[r.peerId] = j;
            m_stats.lastError.clear();
            m_stats.lastRecordedAt = now;
            ++m_stats.rows;
            ++written;
        }
        if (csvDue) {
            if (m_csv->write(j)) {
                m_lastCsvStep[r.peerId] = step;
                ++m_stats.csvRows;
            } else {
                if (m_stats.lastError != m_csv->lastError())
                    log::error("monitor", m_csv->lastError() + "; will try again");
                m_stats.lastError = m_csv->lastError();
            }
        }
    }
    m_stats.peers = m_latest.size();
    return written;
}

void SwarmMetricsRecorder::creditSteps(const std::string &peerId, long step, const nlohmann::json &metrics)
{
    // The earlier steps the record lists (published together when the peer stepped faster than
    // it publishes), oldest first, then the record's own step; the ledger skips what it has.
    std::vector<std::pair<long, long long>> earlier;
    if (const auto steps = metrics.find("steps"); steps != metrics.end() && steps->is_array() && steps->size() <= 64)
        for (const auto &e : *steps)
            if (e.is_array() && e.size() == 2 && e[0].is_number_integer() && e[1].is_number_integer()
                && e[0].get<long>() < step)
                earlier.emplace_back(e[0].get<long>(), e[1].get<long long>());
    std::sort(earlier.begin(), earlier.end());
    for (const auto &[s, samples] : earlier)
        m_credit.add(peerId, s, samples);
    if (const auto samples = metrics.find("samples"); samples != metrics.end() && samples->is_number_integer())
        m_credit.add(peerId, step, samples->get<long long>());
}

std::vector<std::pair<std::string, std::string>> SwarmMetricsRecorder::takeChangedCredit(std::size_t most)
{
    std::lock_guard lock(m_mutex);
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto &peer : m_credit.takeChanged(most))
        if (const auto *c = m_credit.find(peer))
            out.emplace_back(peer, creditToJson(peer, *c).dump());
    return out;
}

long long SwarmMetricsRecorder::linesWritten() const
{
    std::lock_guard lock(m_mutex);
    return m_stats.rows;
}

RecorderStats SwarmMetricsRecorder::stats() const
{
    std::lock_guard lock(m_mutex);
    return m_stats;
}

std::map<std::string, nlohmann::json> SwarmMetricsRecorder::latestByPeer() const
{
    std::lock_guard lock(m_mutex);
    return m_latest;
}

bool SwarmMetricsRecorder::recordEvaluation(nlohmann::json result)
{
    result["event"] = "evaluation";
    result["recorded_at"] = unixNow();
    std::lock_guard lock(m_mutex);
    m_latestEvaluation = result;
    bool ok = writeJsonLine(result.dump() + "\n");
    if (m_evaluationCsv && !m_evaluationCsv->write(result)) {
        log::error("monitor", m_evaluationCsv->lastError());
        m_stats.lastError = m_evaluationCsv->lastError();
        ok = false;
    }
    return ok;
}

nlohmann::json SwarmMetricsRecorder::latestEvaluation() const
{
    std::lock_guard lock(m_mutex);
    return m_latestEvaluation;
}

} // namespace dedloc
