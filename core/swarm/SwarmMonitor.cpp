#include "swarm/SwarmMonitor.h"

#include "util/Error.h"
#include "util/Log.h"
#include "util/Clock.h"

#include <cerrno>
#include <chrono>

namespace dedloc {

SwarmMetricsRecorder::SwarmMetricsRecorder(const std::filesystem::path &jsonLines, const std::filesystem::path &csv)
    : m_jsonPath(jsonLines)
{
    if (!csv.empty())
        m_csv = std::make_unique<MetricsCsvWriter>(csv);
    if (jsonLines.empty())
        return;
    if (jsonLines.has_parent_path()) {
        std::error_code ec;
        std::filesystem::create_directories(jsonLines.parent_path(), ec);
        if (ec)
            throw Error("cannot create " + jsonLines.parent_path().string() + " for the swarm's metrics: " + ec.message());
    }
    m_file = std::fopen(jsonLines.c_str(), "a");
    if (!m_file)
        throw Error(systemErrorText("cannot open " + jsonLines.string() + " for the swarm's metrics", errno));
    // Unbuffered: each line is one write(), so a failed write leaves nothing in a buffer to
    // come out later beside its retry.
    std::setvbuf(m_file, nullptr, _IONBF, 0);
}

SwarmMetricsRecorder::~SwarmMetricsRecorder()
{
    if (m_file)
        std::fclose(m_file);
}

bool SwarmMetricsRecorder::writeJsonLine(const std::string &line)
{
    if (!m_file)
        return true;
    errno = 0;
    if (std::fwrite(line.data(), 1, line.size(), m_file) == line.size() && std::fflush(m_file) == 0)
        return true;
    const auto why = systemErrorText("cannot append to " + m_jsonPath.string(), errno);
    std::clearerr(m_file);
    if (m_stats.lastError != why)
        log::error("monitor", why + "; will try again");
    m_stats.lastError = why;
    return false;
}

int SwarmMetricsRecorder::record(const std::vector<SignedRecord> &records)
{
    int written = 0;
    const double now = unixNow();
    std::lock_guard lock(m_mutex);
    for (const auto &r : records) {
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

} // namespace dedloc
