#include "averaging/UpdateArchive.h"

#include "averaging/SwarmMessages.h"
#include "net/WireMessage.h"

namespace dedloc {

namespace {

using json = nlohmann::json;

std::uint64_t unsignedField(const json &j, const char *key, std::uint64_t max)
{
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_unsigned() || it->get<std::uint64_t>() > max)
        throw ProtocolError(std::string("update field \"") + key + "\" is missing or out of range");
    return it->get<std::uint64_t>();
}

} // namespace

std::uint32_t updateChunks(std::size_t bytes)
{
    return static_cast<std::uint32_t>((bytes + UpdateChunkBytes - 1) / UpdateChunkBytes);
}

json updateHeaderToJson(const AveragedUpdate &u)
{
    json pieces = json::array();
    for (const auto &[offset, count] : u.pieces)
        pieces.push_back({offset, count});
    return {{"e", u.epoch},         {"b", u.batchSamples}, {"z", compressionName(u.codec)}, {"n", u.elements},
            {"s", u.bytes.size()}, {"m", updateChunks(u.bytes.size())}, {"p", std::move(pieces)}};
}

AveragedUpdate updateFromHeader(const json &header, long expectedEpoch, std::uint64_t expectedElements)
{
    AveragedUpdate u;
    u.epoch = static_cast<long>(unsignedField(header, "e", 1ULL << 40));
    if (u.epoch != expectedEpoch)
        throw ProtocolError("update of epoch " + std::to_string(u.epoch) + " answers a request for "
                            + std::to_string(expectedEpoch));
    u.batchSamples = static_cast<long>(unsignedField(header, "b", 1ULL << 40));
    const auto codec = header.contains("z") && header["z"].is_string()
                           ? compressionFromName(header["z"].get<std::string>())
                           : std::nullopt;
    if (!codec)
        throw ProtocolError("update names no known codec");
    u.codec = *codec;
    u.elements = unsignedField(header, "n", expectedElements);
    if (u.elements != expectedElements)
        throw ProtocolError("update has " + std::to_string(u.elements) + " elements, this model "
                            + std::to_string(expectedElements));
    // At most the largest encoding of that many elements (sparse_fp16's: fp32's and a count per
    // block).
    const auto bytes = unsignedField(header, "s", encodedBytes(Compression::SparseFp16, expectedElements) + 1024);
    const auto it = header.find("p");
    if (it == header.end() || !it->is_array() || it->size() > expectedElements)
        throw ProtocolError("update has no piece list");
    for (const auto &p : *it) {
        if (!p.is_array() || p.size() != 2 || !p[0].is_number_unsigned() || !p[1].is_number_unsigned())
            throw ProtocolError("update piece is not [offset, count]");
        u.pieces.emplace_back(p[0].get<std::uint64_t>(), p[1].get<std::uint64_t>());
    }
    if (unsignedField(header, "m", 1ULL << 32) != updateChunks(bytes))
        throw ProtocolError("update chunk count does not match its size");
    u.bytes.resize(bytes); // bounded above by about 4 bytes an element
    checkUpdatePieces(u);  // the bytes themselves are checked when decoded (decodeUpdate)
    return u;
}

void UpdateArchive::add(std::shared_ptr<const AveragedUpdate> update)
{
    if (!m_chain.empty() && update->epoch != m_chain.back()->epoch + 1)
        clear();
    // Its header (the piece list) must fit one service message: a model cut into so many parts
    // is not served for replay (its peers download the state).
    if (encodeServiceMessage("update", updateHeaderToJson(*update)).size() > MaxServiceHeaderBytes) {
        clear();
        return;
    }
    if (m_chain.empty())
        m_bytes = 0;
    m_bytes += update->bytes.size();
    m_chain.push_back(std::move(update));
    while (m_chain.size() > MaxUpdates || (m_chain.size() > 1 && m_bytes > MaxBytes)) {
        m_bytes -= m_chain.front()->bytes.size();
        m_chain.pop_front();
    }
}

const AveragedUpdate *UpdateArchive::find(long epoch) const
{
    if (m_chain.empty() || epoch < first() || epoch >= end())
        return nullptr;
    return m_chain[static_cast<std::size_t>(epoch - first())].get();
}

void UpdateArchive::addGroupUpdate(const std::string &groupId, std::shared_ptr<const AveragedUpdate> update)
{
    if (groupId.empty() || groupId.size() > 64)
        return;
    std::erase_if(m_groups, [&](const auto &g) { return g.first == groupId; });
    m_groups.emplace_back(groupId, std::move(update));
    while (m_groups.size() > MaxGroupUpdates)
        m_groups.pop_front();
}

const AveragedUpdate *UpdateArchive::findGroup(long epoch, const json &groupId) const
{
    if (!groupId.is_string())
        throw ProtocolError("update field \"g\" is not a group id");
    for (const auto &[id, u] : m_groups)
        if (id == groupId.get_ref<const std::string &>() && u->epoch == epoch)
            return u.get();
    return nullptr;
}

UpdateAnswer UpdateArchive::answer(const std::string &type, const json &request) const
{
    const auto epoch = static_cast<long>(unsignedField(request, "e", 1ULL << 40));
    const auto g = request.find("g");
    const auto *u = g == request.end() ? find(epoch) : findGroup(epoch, *g);
    if (!u)
        return {"refuse",
                {{"why", "no update of epoch " + std::to_string(epoch) + (g == request.end() ? "" : " for that group")
                             + " kept"}},
                {}};
    if (type == "update?")
        return {"update", updateHeaderToJson(*u), {}};
    const auto k = unsignedField(request, "k", 1ULL << 32);
    if (k >= updateChunks(u->bytes.size()))
        throw ProtocolError("update chunk " + std::to_string(k) + " does not exist");
    const auto offset = k * UpdateChunkBytes;
    const auto count = std::min(UpdateChunkBytes, u->bytes.size() - offset);
    return {"upart", {{"e", epoch}, {"k", k}}, std::span(u->bytes).subspan(offset, count)};
}

} // namespace dedloc
