#include "eval/SafeTensors.h"

#include "util/AtomicFile.h"
#include "util/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <set>

namespace dedloc {

namespace {

constexpr std::size_t Alignment = 8;
constexpr const char *MetadataKey = "__metadata__";

std::string shapeText(const std::vector<std::int64_t> &shape)
{
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

// The element count the shape asks for; throws on a negative dimension or an overflow.
std::uint64_t elementCount(const std::filesystem::path &file, const SafeTensor &t)
{
    std::uint64_t count = 1;
    for (const auto d : t.shape) {
        if (d < 0 || __builtin_mul_overflow(count, static_cast<std::uint64_t>(d), &count))
            throw Error("cannot write " + file.string() + ": tensor \"" + t.name + "\" has the invalid shape " +
                        shapeText(t.shape));
    }
    return count;
}

void checkTensors(const std::filesystem::path &file, const std::vector<SafeTensor> &tensors)
{
    std::set<std::string> names;
    for (const auto &t : tensors) {
        if (t.name.empty() || t.name == MetadataKey || !names.insert(t.name).second)
            throw Error("cannot write " + file.string() + ": the tensor name \"" + t.name +
                        "\" is empty, reserved or repeated");
        const auto needed = elementCount(file, t);
        if (needed != t.values.size())
            throw Error("cannot write " + file.string() + ": tensor \"" + t.name + "\" has " +
                        std::to_string(t.values.size()) + " values, its shape " + shapeText(t.shape) + " holds " +
                        std::to_string(needed));
    }
}

// The header JSON, padded with spaces so that the data after it starts 8-byte aligned.
std::string headerText(const std::vector<SafeTensor> &tensors, const std::map<std::string, std::string> &metadata)
{
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty())
        header[MetadataKey] = metadata;
    std::uint64_t offset = 0;
    for (const auto &t : tensors) {
        const std::uint64_t end = offset + t.values.size() * sizeof(float);
        header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, end}}};
        offset = end;
    }
    std::string text = header.dump();
    text.append((Alignment - (8 + text.size()) % Alignment) % Alignment, ' ');
    return text;
}

std::array<char, 8> littleEndianU64(std::uint64_t v)
{
    std::array<char, 8> bytes{};
    for (std::size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
    return bytes;
}

void writeValues(AtomicFileWriter &writer, std::span<const float> values)
{
    if constexpr (std::endian::native == std::endian::little) {
        writer.write(values.data(), values.size_bytes());
    } else {
        constexpr std::size_t Chunk = 4096;
        std::vector<std::uint32_t> swapped;
        for (std::size_t begin = 0; begin < values.size(); begin += Chunk) {
            const auto part = values.subspan(begin, std::min(Chunk, values.size() - begin));
            swapped.resize(part.size());
            std::transform(part.begin(), part.end(), swapped.begin(),
                           [](float f) { return __builtin_bswap32(std::bit_cast<std::uint32_t>(f)); });
            writer.write(swapped.data(), swapped.size() * sizeof(std::uint32_t));
        }
    }
}

} // namespace

void writeSafeTensors(const std::filesystem::path &file, const std::vector<SafeTensor> &tensors,
                      const std::map<std::string, std::string> &metadata)
{
    checkTensors(file, tensors);
    const std::string header = headerText(tensors, metadata);
    AtomicFileWriter writer(file);
    writer.write(littleEndianU64(header.size()).data(), 8);
    writer.write(header.data(), header.size());
    for (const auto &t : tensors)
        writeValues(writer, t.values);
    writer.commit();
}

} // namespace dedloc
