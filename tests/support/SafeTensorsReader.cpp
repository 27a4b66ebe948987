#include "SafeTensorsReader.h"

#include "util/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

namespace dedloc::test {

namespace {

using Json = nlohmann::ordered_json;

// Bytes per element of the specification's dtypes.
std::uint64_t dtypeSize(const std::string &dtype)
{
    static const std::map<std::string, std::uint64_t> sizes = {
        {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
        {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
    const auto it = sizes.find(dtype);
    return it == sizes.end() ? 0 : it->second;
}

std::string readBytes(const std::filesystem::path &file)
{
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw Error("cannot read " + file.string());
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

float littleEndianFloat(const unsigned char *p)
{
    std::uint32_t bits = 0;
    for (int i = 0; i < 4; ++i)
        bits |= static_cast<std::uint32_t>(p[i]) << (8 * i);
    float value = 0;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

SafeTensorsEntry parseEntry(const std::string &name, const Json &spec, std::uint64_t bufferBytes)
{
    auto bad = [&](const std::string &why) { return Error("tensor \"" + name + "\": " + why); };
    if (!spec.is_object() || !spec.contains("dtype") || !spec.contains("shape") || !spec.contains("data_offsets"))
        throw bad("needs dtype, shape and data_offsets");
    SafeTensorsEntry e;
    e.name = name;
    if (!spec["dtype"].is_string() || dtypeSize(spec["dtype"].get<std::string>()) == 0)
        throw bad("unknown dtype " + spec["dtype"].dump());
    e.dtype = spec["dtype"].get<std::string>();
    std::uint64_t elements = 1;
    if (!spec["shape"].is_array())
        throw bad("the shape is not an array");
    for (const auto &d : spec["shape"]) {
        if (!d.is_number_unsigned())
            throw bad("a dimension is not a non-negative integer: " + d.dump());
        e.shape.push_back(d.get<std::int64_t>());
        if (__builtin_mul_overflow(elements, d.get<std::uint64_t>(), &elements))
            throw bad("the shape overflows");
    }
    const auto &offsets = spec["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
        throw bad("data_offsets is not [begin, end]");
    e.begin = offsets[0].get<std::uint64_t>();
    e.end = offsets[1].get<std::uint64_t>();
    std::uint64_t bytes = 0;
    if (e.end < e.begin || e.end > bufferBytes)
        throw bad("data_offsets lie outside the buffer");
    if (__builtin_mul_overflow(elements, dtypeSize(e.dtype), &bytes) || bytes != e.end - e.begin)
        throw bad("data_offsets span " + std::to_string(e.end - e.begin) + " bytes, the shape needs " +
                  std::to_string(bytes));
    return e;
}

// In offset order the ranges must tile [0, bufferBytes) exactly.
void checkLayout(std::vector<SafeTensorsEntry> entries, std::uint64_t bufferBytes)
{
    std::sort(entries.begin(), entries.end(),
              [](const auto &a, const auto &b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
    std::uint64_t next = 0;
    for (const auto &e : entries) {
        if (e.begin != next)
            throw Error("tensor \"" + e.name + "\" starts at " + std::to_string(e.begin) + ", not at " +
                        std::to_string(next) + (e.begin < next ? " (overlap)" : " (gap)"));
        next = e.end;
    }
    if (next != bufferBytes)
        throw Error("the tensors end at byte " + std::to_string(next) + ", the buffer has " +
                    std::to_string(bufferBytes) + " bytes");
}

std::map<std::string, std::string> parseMetadata(const Json &metadata)
{
    if (!metadata.is_object())
        throw Error("__metadata__ is not an object");
    std::map<std::string, std::string> out;
    for (const auto &[key, value] : metadata.items()) {
        if (!value.is_string())
            throw Error("__metadata__ value of \"" + key + "\" is not a string");
        out[key] = value.get<std::string>();
    }
    return out;
}

SafeTensorsFile parse(const std::string &bytes)
{
    if (bytes.size() < 8)
        throw Error("shorter than the 8-byte header size");
    SafeTensorsFile out;
    for (int i = 0; i < 8; ++i)
        out.headerBytes |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
    if (out.headerBytes > bytes.size() - 8)
        throw Error("the header size " + std::to_string(out.headerBytes) + " exceeds the file");
    out.dataStart = 8 + out.headerBytes;
    const std::string header = bytes.substr(8, out.headerBytes);
    if (header.empty() || header.front() != '{')
        throw Error("the header does not start with '{'");
    Json json = Json::parse(header, nullptr, false);
    if (json.is_discarded() || !json.is_object())
        throw Error("the header is not a JSON object");
    const std::uint64_t bufferBytes = bytes.size() - out.dataStart;
    for (const auto &[name, spec] : json.items()) {
        if (name == "__metadata__")
            out.metadata = parseMetadata(spec);
        else
            out.tensors.push_back(parseEntry(name, spec, bufferBytes));
    }
    checkLayout(out.tensors, bufferBytes);
    const auto *buffer = reinterpret_cast<const unsigned char *>(bytes.data()) + out.dataStart;
    for (auto &e : out.tensors) {
        if (e.dtype != "F32")
            continue;
        for (std::uint64_t at = e.begin; at < e.end; at += 4)
            e.values.push_back(littleEndianFloat(buffer + at));
    }
    return out;
}

} // namespace

const SafeTensorsEntry *SafeTensorsFile::find(const std::string &name) const
{
    const auto it = std::find_if(tensors.begin(), tensors.end(), [&](const auto &e) { return e.name == name; });
    return it == tensors.end() ? nullptr : &*it;
}

SafeTensorsFile readSafeTensors(const std::filesystem::path &file)
{
    try {
        return parse(readBytes(file));
    } catch (const Error &e) {
        throw Error(file.string() + " is not a valid safetensors file: " + e.what());
    }
}

} // namespace dedloc::test
