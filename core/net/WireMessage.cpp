#include "net/WireMessage.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace dedloc {

namespace {

Compression codecFromName(const std::string &name)
{
    for (auto c : {Compression::None, Compression::Fp16, Compression::Uniform8Bit, Compression::Blockwise8Bit,
                   Compression::SizeAdaptive})
        if (name == compressionName(c))
            return c;
    throw ProtocolError("unknown codec \"" + name + "\"");
}

std::uint64_t unsignedField(const nlohmann::json &j, const char *key, std::uint64_t max)
{
    const auto it = j.find(key);
    if (it == j.end())
        throw ProtocolError(std::string("header field ") + key + " is missing");
    if (!it->is_number_unsigned())
        throw ProtocolError(std::string("header field ") + key + " is not an unsigned integer");
    const auto v = it->get<std::uint64_t>();
    if (v > max)
        throw ProtocolError(std::string("header field ") + key + " = " + std::to_string(v) + " exceeds "
                            + std::to_string(max));
    return v;
}

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
    return nlohmann::json::to_cbor(j);
}

ShardHeader parseShardHeader(std::span<const std::uint8_t> bytes, const ShardSchema &schema)
{
    if (bytes.size() > MaxShardHeaderBytes)
        throw ProtocolError("header of " + std::to_string(bytes.size()) + " bytes is oversized");
    nlohmann::json j;
    try {
        j = nlohmann::json::from_cbor(bytes.begin(), bytes.end());
    } catch (const nlohmann::json::exception &e) {
        throw ProtocolError(std::string("header is not valid CBOR: ") + e.what());
    }
    if (!j.is_object())
        throw ProtocolError("header is not a map");
    if (unsignedField(j, "v", 1000) != 1)
        throw ProtocolError("unsupported protocol version");
    ShardHeader h;
    const auto type = unsignedField(j, "t", 2);
    if (type == 0)
        throw ProtocolError("unknown message type 0");
    h.type = static_cast<MessageType>(type);
    const auto g = j.find("g");
    if (g == j.end() || !g->is_string() || g->get_ref<const std::string &>().size() > 64)
        throw ProtocolError("header field g (group) is missing or malformed");
    h.group = g->get<std::string>();
    if (h.group != schema.group)
        throw ProtocolError("message for another group");
    h.sender = static_cast<std::uint32_t>(unsignedField(j, "s", schema.members == 0 ? 0 : schema.members - 1));
    h.shard = static_cast<std::uint32_t>(unsignedField(j, "h", schema.members == 0 ? 0 : schema.members - 1));
    h.parts = static_cast<std::uint32_t>(unsignedField(j, "n", 1U << 20));
    h.part = static_cast<std::uint32_t>(unsignedField(j, "p", h.parts == 0 ? 0 : h.parts - 1));
    if (h.parts == 0)
        throw ProtocolError("header field n (parts) is 0");
    h.offset = unsignedField(j, "o", schema.shardElements);
    h.count = unsignedField(j, "c", schema.partElements);
    if (h.offset + h.count > schema.shardElements)
        throw ProtocolError("piece [" + std::to_string(h.offset) + ", +" + std::to_string(h.count)
                            + ") lies outside the shard of " + std::to_string(schema.shardElements));
    const auto w = j.find("w");
    if (w == j.end() || !w->is_number() || !std::isfinite(w->get<double>()) || w->get<double>() < 0.0)
        throw ProtocolError("header field w (weight) is missing, negative or not finite");
    h.weight = w->get<double>();
    const auto z = j.find("z");
    if (z == j.end() || !z->is_string())
        throw ProtocolError("header field z (codec) is missing");
    h.codec = codecFromName(z->get<std::string>());
    if (h.codec != schema.codec)
        throw ProtocolError("message uses codec " + z->get<std::string>() + ", the group agreed on "
                            + compressionName(schema.codec));
    if (j.size() != 11)
        throw ProtocolError("header has unknown fields");
    return h;
}

} // namespace dedloc
