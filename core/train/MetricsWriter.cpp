#include "train/MetricsWriter.h"

#include "util/Error.h"
#include "util/Log.h"
#include "util/Clock.h"

#include <cerrno>
#include <chrono>

namespace dedloc {

MetricsWriter::MetricsWriter(const std::filesystem::path &file, std::string peerId, std::string role)
    : m_peerId(std::move(peerId)), m_role(std::move(role))
{
    if (file.empty())
        return;
    if (file.has_parent_path()) {
        std::error_code ec;
        std::filesystem::create_directories(file.parent_path(), ec);
    }
    m_file = std::fopen(file.c_str(), "ae");
    if (!m_file)
        throw Error(systemErrorText("cannot open metrics file " + file.string(), errno));
}

MetricsWriter::~MetricsWriter()
{
    if (m_file)
        std::fclose(m_file);
}

void MetricsWriter::write(const std::string &event, nlohmann::json fields)
{
    if (!m_file || m_failed)
        return;
    const double now = unixNow();
    fields["event"] = event;
    fields["time"] = now;
    fields["peer_id"] = m_peerId;
    fields["role"] = m_role;
    const std::string line = fields.dump() + "\n";
    if (std::fwrite(line.data(), 1, line.size(), m_file) != line.size() || std::fflush(m_file) != 0) {
        m_failed = true;
        log::error("metrics", systemErrorText("cannot write metrics (further metrics are dropped)", errno));
    }
}

} // namespace dedloc
