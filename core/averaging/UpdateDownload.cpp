#include "averaging/UpdateDownload.h"

#include "averaging/UpdateArchive.h"
#include "util/Clock.h"

#include <cstring>

namespace dedloc {

UpdateFetcher::UpdateFetcher(const DonorAdvert &donor, std::string runId, std::uint64_t expectedElements,
                             double timeout, const std::atomic<bool> &stop,
                             const std::shared_ptr<const DataPlaneSecurity> &security)
    : m_client(donor.serviceEndpoint, security, donor.publicKey), m_runId(std::move(runId)),
      m_elements(expectedElements), m_timeout(timeout), m_stop(stop)
{
}

// The answer of `type` for (epoch, chunk), skipping stale answers of earlier requests; nothing
// (with m_why) on a refusal, silence or a stop.
std::optional<ServiceReply> UpdateFetcher::await(const char *type, std::size_t maxData, long epoch, long chunk)
{
    const int dropped = m_client.droppedReplies();
    // One deadline from the request: answers to other requests do not extend it.
    const double until = unixNow() + m_timeout;
    std::optional<ServiceReply> r;
    while ((r = m_client.receive(until - unixNow(), maxData, &m_stop))) {
        const auto &h = r->header;
        if (h.at("t") == "refuse") {
            m_why = "donor has no update: " + textOr(h, "why", "?");
            m_refused = true;
            return std::nullopt;
        }
        if (h.at("t") == type && integerOr(h, "e", -1) == epoch && (chunk < 0 || integerOr(h, "k", -1) == chunk))
            return r;
    }
    if (m_stop.load())
        m_why = "stopped";
    else if (m_client.droppedReplies() > dropped) {
        m_why = "malformed answer: " + m_client.lastDropReason();
        m_invalid = true;
    } else
        m_why = "donor did not answer";
    return std::nullopt;
}

std::optional<AveragedUpdate> UpdateFetcher::fetch(long epoch, const std::string &groupId)
{
    m_refused = false;
    nlohmann::json ask = {{"run", m_runId}, {"e", epoch}};
    if (!groupId.empty())
        ask["g"] = groupId;
    m_client.send("update?", ask);
    const auto header = await("update", 0, epoch, -1);
    if (!header)
        return std::nullopt;
    AveragedUpdate u;
    try {
        u = updateFromHeader(header->header, epoch, m_elements);
    } catch (const std::exception &e) {
        m_why = std::string("donor offered a bad update: ") + e.what();
        m_invalid = true;
        return std::nullopt;
    }
    const auto chunks = updateChunks(u.bytes.size());
    for (std::uint32_t k = 0; k < chunks; ++k) {
        const std::size_t offset = std::size_t{k} * UpdateChunkBytes;
        const std::size_t count = std::min(UpdateChunkBytes, u.bytes.size() - offset);
        nlohmann::json request = {{"e", epoch}, {"k", k}};
        if (!groupId.empty())
            request["g"] = groupId;
        m_client.send("upart?", request);
        const auto part = await("upart", count, epoch, k);
        if (!part)
            return std::nullopt;
        if (part->data.size() != count) {
            m_why = "update chunk " + std::to_string(k) + " has " + std::to_string(part->data.size()) + " bytes, expected "
                    + std::to_string(count);
            m_invalid = true;
            return std::nullopt;
        }
        std::memcpy(u.bytes.data() + offset, part->data.data(), count);
    }
    return u;
}

} // namespace dedloc
