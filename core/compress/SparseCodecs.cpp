#include "compress/SparseCodecs.h"

#include "compress/Compression.h"
#include "compress/LittleEndian.h"
#include "util/Error.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <string>

namespace dedloc::sparse {

namespace {

constexpr std::size_t Block = BlockwiseBlockElements;
constexpr int MaxCode = 7;        // codes q in [-7, 7], sent as the nibble q + 8
constexpr int ZeroNibble = 8;

std::size_t blocks(std::size_t elements)
{
    return (elements + Block - 1) / Block;
}

std::size_t blockLength(std::size_t elements, std::size_t b)
{
    return std::min(Block, elements - b * Block);
}

// absmax / 7 with the low 3 mantissa bits cleared: 7 * s and q * s (|q| <= 7) are then exact, and
// the scale of decoded values, (7 s) / 7, is s again.
float topKScale(float absmax)
{
    const float s = absmax / static_cast<float>(MaxCode);
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(s) & ~std::uint32_t{7});
}

// Encodes one block: the kept elements' positions by decreasing magnitude (ties: lower index
// first, so the choice is deterministic), then written in index order.
void encodeBlock(std::span<const float> v, std::uint8_t *out, std::vector<std::uint16_t> &order)
{
    const std::size_t k = keptInBlock(v.size());
    order.resize(v.size());
    std::iota(order.begin(), order.end(), std::uint16_t{0});
    const auto larger = [&](std::uint16_t a, std::uint16_t b) {
        const float x = std::abs(v[a]), y = std::abs(v[b]);
        return x > y || (x == y && a < b);
    };
    std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k - 1), order.end(), larger);
    std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
    float absmax = 0.0F;
    for (std::size_t i = 0; i < k; ++i)
        absmax = std::max(absmax, std::abs(v[order[i]]));
    const float scale = topKScale(absmax);
    le::putF32(out, scale);
    for (std::size_t i = 0; i < k; ++i) {
        const std::uint16_t at = order[i];
        const long q = scale > 0.0F ? std::clamp(std::lround(v[at] / scale), -long{MaxCode}, long{MaxCode}) : 0;
        le::putU16(out + 4 + 2 * i, static_cast<std::uint16_t>((at << 4) | static_cast<unsigned>(q + ZeroNibble)));
    }
}

void decodeBlock(const std::uint8_t *in, std::span<float> out)
{
    const float scale = le::getF32(in);
    if (!std::isfinite(scale) || scale < 0.0F)
        throw Error("topk4bit block has the scale " + std::to_string(scale) + " (a finite value >= 0 was due)");
    std::fill(out.begin(), out.end(), 0.0F);
    const std::size_t k = keptInBlock(out.size());
    for (std::size_t i = 0; i < k; ++i) {
        const std::uint16_t entry = le::getU16(in + 4 + 2 * i);
        const std::size_t at = entry >> 4;
        const int nibble = entry & 0xF;
        if (at >= out.size())
            throw Error("topk4bit entry at " + std::to_string(at) + " in a block of " + std::to_string(out.size()));
        if (nibble == 0)
            throw Error("topk4bit entry with the code -8 (codes are -7..7)");
        if (nibble == ZeroNibble)
            continue;
        if (out[at] != 0.0F)
            throw Error("topk4bit block sets element " + std::to_string(at) + " twice");
        out[at] = static_cast<float>(nibble - ZeroNibble) * scale;
    }
}

} // namespace

std::size_t keptInBlock(std::size_t blockElements)
{
    return (blockElements * TopKKeptPerBlock + Block - 1) / Block;
}

std::size_t topKBytes(std::size_t elements)
{
    std::size_t bytes = 0;
    for (std::size_t b = 0; b < blocks(elements); ++b)
        bytes += 4 + 2 * keptInBlock(blockLength(elements, b));
    return bytes;
}

void encodeTopK(std::span<const float> values, std::span<std::uint8_t> out)
{
    std::vector<std::uint16_t> order;
    std::size_t at = 0;
    for (std::size_t b = 0; b < blocks(values.size()); ++b) {
        const auto v = values.subspan(b * Block, blockLength(values.size(), b));
        encodeBlock(v, out.data() + at, order);
        at += 4 + 2 * keptInBlock(v.size());
    }
}

void decodeTopK(std::span<const std::uint8_t> bytes, std::span<float> out)
{
    std::size_t at = 0;
    for (std::size_t b = 0; b < blocks(out.size()); ++b) {
        const auto o = out.subspan(b * Block, blockLength(out.size(), b));
        decodeBlock(bytes.data() + at, o);
        at += 4 + 2 * keptInBlock(o.size());
    }
}

std::size_t sparseFp16MaxBytes(std::size_t elements)
{
    return 2 * blocks(elements) + 4 * elements;
}

std::size_t sparseFp16LeastBytes(std::size_t elements)
{
    return 2 * blocks(elements);
}

std::vector<std::uint8_t> encodeSparseFp16(std::span<const float> values)
{
    std::vector<std::uint8_t> out;
    std::vector<std::uint16_t> at, half;
    for (std::size_t b = 0; b < blocks(values.size()); ++b) {
        const auto v = values.subspan(b * Block, blockLength(values.size(), b));
        at.clear();
        half.clear();
        for (std::size_t i = 0; i < v.size(); ++i) {
            const std::uint16_t h = floatToHalf(v[i]);
            if ((h & 0x7FFFU) != 0) { // a value that rounds to +-0 is left out
                at.push_back(static_cast<std::uint16_t>(i));
                half.push_back(h);
            }
        }
        const std::size_t start = out.size();
        out.resize(start + 2 + 4 * at.size());
        le::putU16(out.data() + start, static_cast<std::uint16_t>(at.size()));
        for (std::size_t i = 0; i < at.size(); ++i) {
            le::putU16(out.data() + start + 2 + 2 * i, at[i]);
            le::putU16(out.data() + start + 2 + 2 * at.size() + 2 * i, half[i]);
        }
    }
    return out;
}

std::size_t sparseFp16Length(std::span<const std::uint8_t> bytes, std::size_t elements)
{
    std::size_t at = 0;
    for (std::size_t b = 0; b < blocks(elements); ++b) {
        if (bytes.size() - at < 2)
            throw Error("sparse_fp16 encoding ends before block " + std::to_string(b));
        const std::size_t count = le::getU16(bytes.data() + at);
        if (count > blockLength(elements, b))
            throw Error("sparse_fp16 block " + std::to_string(b) + " counts " + std::to_string(count)
                        + " values, more than its " + std::to_string(blockLength(elements, b)) + " elements");
        if (bytes.size() - at - 2 < 4 * count)
            throw Error("sparse_fp16 encoding ends inside block " + std::to_string(b));
        at += 2 + 4 * count;
    }
    return at;
}

void decodeSparseFp16(std::span<const std::uint8_t> bytes, std::span<float> out)
{
    if (sparseFp16Length(bytes, out.size()) != bytes.size())
        throw Error("sparse_fp16 encoding of " + std::to_string(out.size()) + " elements is followed by "
                    + std::to_string(bytes.size() - sparseFp16Length(bytes, out.size())) + " more bytes");
    std::fill(out.begin(), out.end(), 0.0F);
    std::size_t at = 0;
    for (std::size_t b = 0; b < blocks(out.size()); ++b) {
        const auto o = out.subspan(b * Block, blockLength(out.size(), b));
        const std::size_t count = le::getU16(bytes.data() + at);
        long previous = -1;
        for (std::size_t i = 0; i < count; ++i) {
            const long index = le::getU16(bytes.data() + at + 2 + 2 * i);
            const std::uint16_t h = le::getU16(bytes.data() + at + 2 + 2 * count + 2 * i);
            if (index <= previous || static_cast<std::size_t>(index) >= o.size())
                throw Error("sparse_fp16 block " + std::to_string(b) + " has the index " + std::to_string(index)
                            + " after " + std::to_string(previous) + " (increasing indices inside the block were due)");
            if ((h & 0x7C00U) == 0x7C00U)
                throw Error("sparse_fp16 block " + std::to_string(b) + " carries a non-finite value");
            o[static_cast<std::size_t>(index)] = halfToFloat(h);
            previous = index;
        }
        at += 2 + 4 * count;
    }
}

} // namespace dedloc::sparse
