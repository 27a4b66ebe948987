#include "net/WireMessage.h"

#include "util/JsonReader.h"

#include <nlohmann/json.hpp>

#include <limits>

namespace dedloc {

namespace {

Compression codecFromName(const std::string &name)
{
    if (const auto c = compressionFromName(name))
        return *c;
    throw ProtocolError("unknown codec \"" + name + "\"");
}

// A refused header field, as the ProtocolError the caller drops the message for.
[[noreturn]] void headerFailure(const std::string &field, const std::string &what)
{
    throw ProtocolError(field.empty() ? "header: " + what : "header field " + field + ": " + what);
}

constexpr std::size_t MaxGroupBytes = 64;

} // namespace

std::vector<std::uint8_t> encodeShardHeader(const ShardHeader &h)
{
    nlohmann::json j = {{"v", 1},
                        {"t", static_cast<unsigned>(h.type)},
                        {"g", h.group},
                        {"s", h.sender},
                        {"h", h.shard},
                        {"p", h.part},
                        {"n", h.parts},
                        {"o", h.offset},
                        {"c", h.count},
                        {"w", h.weight},
                        {"z", compressionName(h.codec)}};
    if (h.radius >= 0.0)
        j["k"] = h.radius;
    if (h.counted >= 0.0)
        j["u"] = h.counted;
    return nlohmann::json::to_cbor(j);
}

ShardHeader parseShardHeader(std::span<const std::uint8_t> bytes, const ShardSchema &schema)
{
    if (bytes.size() > MaxShardHeaderBytes)
        throw ProtocolError("header of " + std::to_string(bytes.size()) + " bytes is oversized");
    const auto j = parseCbor(bytes);
    if (j.is_discarded())
        throw ProtocolError("header is not valid CBOR (or nests too deep)");
    if (!j.is_object())
        throw ProtocolError("header is not a map");
    // The version before the field set: another version may have other fields.
    if (const auto v = j.find("v"); v != j.end() && v->is_number_integer() && *v != 1)
        throw ProtocolError("unsupported protocol version");
    const JsonObjectReader r(j, {"v", "t", "g", "s", "h", "p", "n", "o", "c", "w", "z", "k", "u"}, headerFailure);
    (void)r.unsignedInteger("v", 1);
    ShardHeader h;
    const auto type = r.unsignedInteger("t", 2);
    if (type == 0)
        throw ProtocolError("unknown message type 0");
    h.type = static_cast<MessageType>(type);
    h.group = r.string("g");
    if (h.group.size() > MaxGroupBytes)
        r.fail("g", "longer than " + std::to_string(MaxGroupBytes) + " bytes");
    if (h.group != schema.group)
        throw ProtocolError("message for another group");
    const std::uint64_t lastMember = schema.members == 0 ? 0 : schema.members - 1;
    h.sender = static_cast<std::uint32_t>(r.unsignedInteger("s", lastMember));
    h.shard = static_cast<std::uint32_t>(r.unsignedInteger("h", lastMember));
    h.parts = static_cast<std::uint32_t>(r.unsignedInteger("n", 1U << 20));
    h.part = static_cast<std::uint32_t>(r.unsignedInteger("p", h.parts == 0 ? 0 : h.parts - 1));
    if (h.parts == 0)
        r.fail("n", "must be at least 1");
    h.offset = r.unsignedInteger("o", schema.shardElements);
    h.count = r.unsignedInteger("c", schema.partElements);
    if (h.offset + h.count > schema.shardElements)
        throw ProtocolError("piece [" + std::to_string(h.offset) + ", +" + std::to_string(h.count) +
                            ") lies outside the shard of " + std::to_string(schema.shardElements));
    h.weight = r.numberIn("w", 0.0, false, std::numeric_limits<double>::infinity(), true);
    const auto codec = r.string("z");
    h.codec = codecFromName(codec);
    if (h.codec != schema.codec)
        throw ProtocolError("message uses codec " + codec + ", the group agreed on " + compressionName(schema.codec));
    if (r.has("k"))
        h.radius = r.numberIn("k", 0.0, false, MaxHeaderRadius, false);
    if (r.has("u"))
        h.counted = r.numberIn("u", 0.0, false, MaxHeaderWeight, false);
    return h;
}

} // namespace dedloc
