#include "train/MetricsWriter.h"

#include "util/Clock.h"
#include "util/Log.h"

namespace dedloc {

MetricsWriter::MetricsWriter(const std::filesystem::path &file, std::string peerId, std::string role)
    : m_peerId(std::move(peerId)), m_role(std::move(role))
{
    m_out.open(file, "this peer's metrics");
}

MetricsWriter::~MetricsWriter() = default;

void MetricsWriter::write(const std::string &event, nlohmann::json fields)
{
    const std::lock_guard lock(m_mutex);
    if (!m_out.isOpen() || m_failed)
        return;
    const double now = unixNow();
    fields["event"] = event;
    fields["time"] = now;
    fields["peer_id"] = m_peerId;
    fields["role"] = m_role;
    if (!m_out.append(fields.dump() + "\n")) {
        m_failed = true;
        log::error("metrics", m_out.lastError() + " (further metrics are dropped)");
    }
}

} // namespace dedloc
