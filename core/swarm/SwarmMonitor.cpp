#include "swarm/SwarmMonitor.h"

#include "util/Error.h"
#include "util/Log.h"

#include <nlohmann/json.hpp>

#include <chrono>

namespace dedloc {

SwarmMetricsRecorder::SwarmMetricsRecorder(const std::filesystem::path &file)
{
    if (file.empty())
        return;
    if (file.has_parent_path())
        std::filesystem::create_directories(file.parent_path());
    m_file = std::fopen(file.c_str(), "a");
    if (!m_file)
        throw Error("cannot open " + file.string() + " for the swarm's metrics");
}

SwarmMetricsRecorder::~SwarmMetricsRecorder()
{
    if (m_file)
        std::fclose(m_file);
}

int SwarmMetricsRecorder::record(const std::vector<SignedRecord> &records)
{
    int written = 0;
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (const auto &r : records) {
        auto j = nlohmann::json::parse(r.payload, nullptr, false);
        if (j.is_discarded() || !j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) {
            log::warning("monitor", "skipped a metrics record of " + r.peerId.substr(0, 8) + ": not step metrics");
            continue;
        }
        const long step = j["step"].get<long>();
        auto it = m_lastStep.find(r.peerId);
        if (it != m_lastStep.end() && it->second >= step)
            continue;
        m_lastStep[r.peerId] = step;
        j["peer_id"] = r.peerId; // the verified signer, whatever the payload claims
        j["recorded_at"] = now;
        ++written;
        ++m_lines;
        if (m_file) {
            const auto line = j.dump() + "\n";
            std::fwrite(line.data(), 1, line.size(), m_file);
            std::fflush(m_file);
        }
    }
    return written;
}

} // namespace dedloc
