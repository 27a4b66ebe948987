#include "train/CheckpointFormat.h"

#include "util/Error.h"
#include "util/Hash.h"
#include "util/JsonReader.h"

#include <cstring>

namespace dedloc {

namespace {

constexpr char Magic[8] = {'D', 'D', 'L', 'C', 'K', 'P', 'T', '1'};

void putU64(std::string &out, std::uint64_t v)
{
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::uint64_t getU64(const char *p)
{
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    return v;
}

// One entry of the header's "tensors", checked against the data's place in the file:
// [dataStart, body).
CheckpointEntry entryOf(const nlohmann::json &t, std::size_t dataStart, std::size_t body)
{
    CheckpointEntry e;
    e.name = t.at("name").get<std::string>();
    e.shape = t.at("shape").get<std::vector<std::int64_t>>();
    const auto offset = t.at("offset").get<std::uint64_t>();
    const auto bytes = t.at("bytes").get<std::uint64_t>();
    std::uint64_t numel = 1;
    for (auto d : e.shape) {
        if (d < 0 || (d > 0 && numel > (std::uint64_t{1} << 40) / static_cast<std::uint64_t>(d)))
            throw Error("bad shape");
        numel *= static_cast<std::uint64_t>(d);
    }
    if (bytes != numel * sizeof(float) || offset > body - dataStart || bytes > body - dataStart - offset)
        throw Error("tensor " + e.name + " lies outside the file");
    e.offset = dataStart + static_cast<std::size_t>(offset);
    e.bytes = static_cast<std::size_t>(bytes);
    return e;
}

} // namespace

std::string checkpointPrefix(const std::string &header)
{
    std::string prefix(Magic, sizeof Magic);
    putU64(prefix, header.size());
    prefix += header;
    return prefix;
}

CheckpointLayout parseCheckpoint(std::string_view data, const std::string &where)
{
    if (data.size() < sizeof Magic + 8 + CheckpointTrailerBytes || std::memcmp(data.data(), Magic, sizeof Magic) != 0)
        throw Error(where + " is truncated or not a DeDLOC checkpoint");
    const std::size_t body = data.size() - CheckpointTrailerBytes;
    if (sha256Hex(data.data(), body) != data.substr(body))
        throw Error(where + " is corrupt (SHA-256 of its contents does not match its trailer)");
    const std::uint64_t headerBytes = getU64(data.data() + sizeof Magic);
    if (headerBytes > body || sizeof Magic + 8 + headerBytes > body)
        throw Error(where + " has a header larger than the file");
    const std::size_t dataStart = sizeof Magic + 8 + static_cast<std::size_t>(headerBytes);

    CheckpointLayout out;
    try {
        const auto header = parseJsonText(data.substr(sizeof Magic + 8, headerBytes));
        if (header.is_discarded())
            throw Error("its header is not JSON, or nests deeper than 64 levels");
        out.meta = header.at("meta");
        for (const auto &t : header.at("tensors"))
            out.tensors.push_back(entryOf(t, dataStart, body));
    } catch (const nlohmann::json::exception &e) {
        throw Error(where + " has a malformed header: " + e.what());
    } catch (const Error &e) {
        throw Error(where + " is malformed: " + e.what());
    }
    return out;
}

} // namespace dedloc
