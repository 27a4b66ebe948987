#include "compress/Compression.h"

#include "compress/LittleEndian.h"
#include "compress/SparseCodecs.h"
#include "util/Error.h"

#include <algorithm>
#include <bit>
#include <immintrin.h>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

namespace dedloc {

namespace {

constexpr std::pair<Compression, const char *> kCompressionNames[] = {
    {Compression::None, "none"},
    {Compression::Fp16, "fp16"},
    {Compression::Uniform8Bit, "uniform8bit"},
    {Compression::Blockwise8Bit, "blockwise8bit"},
    {Compression::SizeAdaptive, "size_adaptive"},
    {Compression::TopK4Bit, "topk4bit"},
    {Compression::SparseFp16, "sparse_fp16"},
};

} // namespace

const char *compressionName(Compression c)
{
    for (const auto &[value, spelling] : kCompressionNames)
        if (value == c)
            return spelling;
    return "unknown";
}

std::optional<Compression> compressionFromName(std::string_view name)
{
    for (const auto &[value, spelling] : kCompressionNames)
        if (name == spelling)
            return value;
    return std::nullopt;
}

std::string compressionChoices()
{
    std::string choices;
    for (const auto &[value, spelling] : kCompressionNames)
        if (value != Compression::SparseFp16)
            choices += choices.empty() ? spelling : std::string(", ") + spelling;
    return choices;
}

namespace {

using le::getF32;
using le::putF32;

constexpr std::size_t UniformBins = 256;
constexpr double UniformRangeSigmas = 6.0;
constexpr std::size_t UniformHeaderBytes = 8 + UniformBins * 4;

void requireFinite(std::span<const float> values)
{
    // The scan has no early exit, so that it vectorises; only an error looks for the element.
    std::uint32_t nonFinite = 0;
    for (float x : values)
        nonFinite |= static_cast<std::uint32_t>((std::bit_cast<std::uint32_t>(x) & 0x7F800000U) == 0x7F800000U);
    if (!nonFinite)
        return;
    for (std::size_t i = 0; i < values.size(); ++i)
        if (!std::isfinite(values[i]))
            throw Error("cannot compress a non-finite value (element " + std::to_string(i) + ")");
}

// The sum of f(x) over v in double, in four interleaved running sums: each addition waits for
// its own sum's only (about four times faster than one chain); the order moves the last bits.
template <typename F>
double sumOf(std::span<const float> v, F f)
{
    double s[4] = {0.0, 0.0, 0.0, 0.0};
    const std::size_t n = v.size();
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (std::size_t k = 0; k < 4; ++k)
            s[k] += f(v[i + k]);
    for (; i < n; ++i)
        s[0] += f(v[i]);
    return (s[0] + s[1]) + (s[2] + s[3]);
}

// Bin of each value: floor((x - mean) / scale + 1/2) + bins/2, clamped to [0, bins - 1] (round half
// up, as std::round but for exact negative halves). A loop without branches or calls, which the
// compiler vectorises.
void uniformCodes(std::span<const float> v, double mean, double scale, std::uint8_t *codes)
{
    const double inv = 1.0 / scale, shift = UniformBins / 2.0 + 0.5, top = UniformBins - 1.0;
    for (std::size_t i = 0; i < v.size(); ++i) {
        const double t = std::min(std::max((static_cast<double>(v[i]) - mean) * inv + shift, 0.0), top);
        codes[i] = static_cast<std::uint8_t>(static_cast<int>(t));
    }
}

void encodeUniform(std::span<const float> v, std::uint8_t *out)
{
    const std::size_t n = v.size();
    const double mean = n ? sumOf(v, [](float x) { return static_cast<double>(x); }) / static_cast<double>(n) : 0.0;
    const double var = sumOf(v, [mean](float x) { return (x - mean) * (x - mean); });
    const double sigma = n > 1 ? std::sqrt(var / static_cast<double>(n - 1)) : 0.0;
    const double scale = sigma > 0.0 ? UniformRangeSigmas * sigma / UniformBins : 1.0;
    std::uint8_t *codes = out + UniformHeaderBytes;
    uniformCodes(v, mean, scale, codes);
    // Each bin's sum and count in four copies, element i in copy i % 4: consecutive values mostly
    // fall in the same few bins, and one copy would make every addition wait for the last.
    double sum[4][UniformBins] = {};
    std::uint32_t count[4][UniformBins] = {};
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (std::size_t k = 0; k < 4; ++k) {
            sum[k][codes[i + k]] += v[i + k];
            ++count[k][codes[i + k]];
        }
    for (; i < n; ++i) {
        sum[0][codes[i]] += v[i];
        ++count[0][codes[i]];
    }
    putF32(out, static_cast<float>(mean));
    putF32(out + 4, static_cast<float>(scale));
    for (std::size_t b = 0; b < UniformBins; ++b) {
        const double binSum = (sum[0][b] + sum[1][b]) + (sum[2][b] + sum[3][b]);
        const std::uint32_t binCount = count[0][b] + count[1][b] + count[2][b] + count[3][b];
        // Empty bins decode to their centre (never used by this tensor, but well defined).
        const double centre = mean + (static_cast<double>(b) - UniformBins / 2.0) * scale;
        putF32(out + 8 + 4 * b, static_cast<float>(binCount ? binSum / binCount : centre));
    }
}

// One block's codes, std::lround(x * 127 / absmax) (ties away from zero) without its call: |p| <= 127,
// and p +- 1/2 is exact in double. Below an absmax of about 3.7e-37 the float quotient 127 / absmax
// overflows: such a block is scaled in double (an infinite scale would make the conversion undefined).
void blockwiseCodes(std::span<const float> block, float absmax, std::int8_t *codes)
{
    const float inv = absmax > 0.0F ? 127.0F / absmax : 0.0F;
    if (std::isfinite(inv)) {
        for (std::size_t i = 0; i < block.size(); ++i) {
            const float p = block[i] * inv;
            codes[i] = static_cast<std::int8_t>(static_cast<int>(static_cast<double>(p) + (p < 0.0F ? -0.5 : 0.5)));
        }
        return;
    }
    const double wide = 127.0 / static_cast<double>(absmax);
    for (std::size_t i = 0; i < block.size(); ++i) {
        const double p = static_cast<double>(block[i]) * wide;
        codes[i] = static_cast<std::int8_t>(static_cast<int>(p + (p < 0.0 ? -0.5 : 0.5)));
    }
}

void decodeUniform(const std::uint8_t *in, std::span<float> out)
{
    float codebook[UniformBins];
    for (std::size_t b = 0; b < UniformBins; ++b)
        codebook[b] = getF32(in + 8 + 4 * b);
    const std::uint8_t *codes = in + UniformHeaderBytes;
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = codebook[codes[i]];
}

// F16C converts 8 values per instruction (x86-64 since 2012); the scalar code is the reference
// and the fallback. Inputs are clamped to +-65504 first so both paths saturate alike.
__attribute__((target("avx,f16c"))) void floatsToHalvesF16c(const float *in, std::uint8_t *out, std::size_t n)
{
    const __m256 hi = _mm256_set1_ps(65504.0F), lo = _mm256_set1_ps(-65504.0F);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_max_ps(_mm256_min_ps(_mm256_loadu_ps(in + i), hi), lo);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(out + 2 * i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; ++i) {
        const auto h = floatToHalf(in[i]);
        out[2 * i] = static_cast<std::uint8_t>(h);
        out[2 * i + 1] = static_cast<std::uint8_t>(h >> 8);
    }
}

__attribute__((target("avx,f16c"))) void halvesToFloatsF16c(const std::uint8_t *in, float *out, std::size_t n)
{
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(in + 2 * i))));
    for (; i < n; ++i)
        out[i] = halfToFloat(static_cast<std::uint16_t>(in[2 * i] | (in[2 * i + 1] << 8)));
}

bool hasF16c()
{
    static const bool has = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
    return has;
}

std::size_t blockCount(std::size_t elements)
{
    return (elements + BlockwiseBlockElements - 1) / BlockwiseBlockElements;
}

} // namespace

std::uint16_t floatToHalf(float value)
{
    const auto bits = std::bit_cast<std::uint32_t>(value);
    const std::uint32_t sign = (bits >> 16) & 0x8000U;
    const std::uint32_t absBits = bits & 0x7FFFFFFFU;
    if (absBits > 0x7F800000U)
        return static_cast<std::uint16_t>(sign | 0x7E00U); // NaN
    if (absBits >= 0x477FF000U)                             // >= 65520 rounds past the largest half
        return static_cast<std::uint16_t>(sign | 0x7BFFU);   // saturate to 65504
    if (absBits < 0x38800000U) {                            // below the smallest normal half: subnormal
        if (absBits < 0x33000000U)                          // < 2^-25 rounds to zero
            return static_cast<std::uint16_t>(sign);
        const std::uint32_t mantissa = (absBits & 0x7FFFFFU) | 0x800000U;
        const int shift = 126 - static_cast<int>(absBits >> 23); // 14..24
        std::uint32_t half = mantissa >> shift;
        const std::uint32_t rest = mantissa & ((1U << shift) - 1U);
        const std::uint32_t halfway = 1U << (shift - 1);
        if (rest > halfway || (rest == halfway && (half & 1U)))
            ++half;
        return static_cast<std::uint16_t>(sign | half);
    }
    // Normal: rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10 bits.
    std::uint32_t half = ((absBits - 0x38000000U) >> 13);
    const std::uint32_t rest = absBits & 0x1FFFU;
    if (rest > 0x1000U || (rest == 0x1000U && (half & 1U)))
        ++half; // may carry into the exponent, which is still correct
    return static_cast<std::uint16_t>(sign | half);
}

float halfToFloat(std::uint16_t h)
{
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000U) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1FU;
    std::uint32_t mantissa = h & 0x3FFU;
    if (exponent == 0) {
        if (mantissa == 0)
            return std::bit_cast<float>(sign);
        // Subnormal half -> normal float.
        int e = -1;
        do {
            ++e;
            mantissa <<= 1;
        } while ((mantissa & 0x400U) == 0);
        return std::bit_cast<float>(sign | ((112U - static_cast<std::uint32_t>(e)) << 23) | ((mantissa & 0x3FFU) << 13));
    }
    if (exponent == 31)
        return std::bit_cast<float>(sign | 0x7F800000U | (mantissa << 13));
    return std::bit_cast<float>(sign | ((exponent + 112U) << 23) | (mantissa << 13));
}

Compression effectiveCodec(Compression codec, std::size_t elements)
{
    if (codec == Compression::SizeAdaptive)
        return elements <= SizeAdaptiveFp16Limit ? Compression::Fp16 : Compression::Uniform8Bit;
    return codec;
}

Compression resultCodec(Compression codec)
{
    return codec == Compression::TopK4Bit ? Compression::SparseFp16 : codec;
}

std::size_t codecAlignment(Compression codec)
{
    return codec == Compression::TopK4Bit ? BlockwiseBlockElements : 1;
}

bool isVariableLength(Compression codec)
{
    return codec == Compression::SparseFp16;
}

std::size_t leastEncodedBytes(Compression codec, std::size_t elements)
{
    return isVariableLength(codec) ? sparse::sparseFp16LeastBytes(elements) : encodedBytes(codec, elements);
}

std::size_t encodedLength(Compression codec, std::span<const std::uint8_t> bytes, std::size_t elements)
{
    if (isVariableLength(codec))
        return sparse::sparseFp16Length(bytes, elements);
    const auto n = encodedBytes(codec, elements);
    if (n > bytes.size())
        throw Error(std::to_string(elements) + " elements in " + compressionName(codec) + " take " + std::to_string(n)
                    + " bytes; only " + std::to_string(bytes.size()) + " are left");
    return n;
}

std::size_t encodedBytes(Compression codec, std::size_t elements)
{
    switch (effectiveCodec(codec, elements)) {
    case Compression::TopK4Bit: return sparse::topKBytes(elements);
    case Compression::SparseFp16: return sparse::sparseFp16MaxBytes(elements);
    case Compression::None: return 4 * elements;
    case Compression::Fp16: return 2 * elements;
    case Compression::Uniform8Bit: return UniformHeaderBytes + elements;
    case Compression::Blockwise8Bit: return 4 * blockCount(elements) + elements;
    case Compression::SizeAdaptive: break;
    }
    throw Error("unknown compression codec");
}

std::vector<std::uint8_t> encode(Compression codec, std::span<const float> values)
{
    if (isVariableLength(codec)) {
        requireFinite(values);
        return sparse::encodeSparseFp16(values);
    }
    std::vector<std::uint8_t> out(encodedBytes(codec, values.size()));
    encodeInto(codec, values, out);
    return out;
}

void encodeInto(Compression codec, std::span<const float> values, std::span<std::uint8_t> out)
{
    requireFinite(values);
    const std::size_t n = values.size();
    const Compression c = effectiveCodec(codec, n);
    if (isVariableLength(c))
        throw Error(std::string("encodeInto: ") + compressionName(c) + " has no fixed size; use encode()");
    if (out.size() != encodedBytes(c, n))
        throw Error("compression buffer has " + std::to_string(out.size()) + " bytes, expected "
                    + std::to_string(encodedBytes(c, n)));
    switch (c) {
    case Compression::None:
        if constexpr (std::endian::native == std::endian::little) {
            if (n)
                std::memcpy(out.data(), values.data(), 4 * n);
        } else {
            for (std::size_t i = 0; i < n; ++i)
                putF32(out.data() + 4 * i, values[i]);
        }
        break;
    case Compression::Fp16:
        if (hasF16c()) {
            floatsToHalvesF16c(values.data(), out.data(), n);
            break;
        }
        for (std::size_t i = 0; i < n; ++i) {
            const auto h = floatToHalf(values[i]);
            out[2 * i] = static_cast<std::uint8_t>(h);
            out[2 * i + 1] = static_cast<std::uint8_t>(h >> 8);
        }
        break;
    case Compression::Uniform8Bit:
        encodeUniform(values, out.data());
        break;
    case Compression::Blockwise8Bit: {
        const std::size_t blocks = blockCount(n);
        auto *codes = reinterpret_cast<std::int8_t *>(out.data() + 4 * blocks);
        for (std::size_t b = 0; b < blocks; ++b) {
            const std::size_t begin = b * BlockwiseBlockElements, end = std::min(n, begin + BlockwiseBlockElements);
            float absmax = 0.0F;
            for (std::size_t i = begin; i < end; ++i)
                absmax = std::max(absmax, std::abs(values[i]));
            putF32(out.data() + 4 * b, absmax);
            blockwiseCodes(values.subspan(begin, end - begin), absmax, codes + begin);
        }
        break;
    }
    case Compression::TopK4Bit:
        sparse::encodeTopK(values, out);
        break;
    case Compression::SizeAdaptive:
    case Compression::SparseFp16:
        break;
    }
}

void decode(Compression codec, std::span<const std::uint8_t> bytes, std::span<float> out)
{
    const std::size_t n = out.size();
    const Compression c = effectiveCodec(codec, n);
    if (isVariableLength(c)) {
        sparse::decodeSparseFp16(bytes, out);
        return;
    }
    if (bytes.size() != encodedBytes(c, n))
        throw Error("compressed tensor has " + std::to_string(bytes.size()) + " bytes; " + std::to_string(n)
                    + " elements in " + compressionName(c) + " take " + std::to_string(encodedBytes(c, n)));
    switch (c) {
    case Compression::None:
        if constexpr (std::endian::native == std::endian::little) {
            if (n)
                std::memcpy(out.data(), bytes.data(), 4 * n);
        } else {
            for (std::size_t i = 0; i < n; ++i)
                out[i] = getF32(bytes.data() + 4 * i);
        }
        break;
    case Compression::Fp16:
        if (hasF16c()) {
            halvesToFloatsF16c(bytes.data(), out.data(), n);
            break;
        }
        for (std::size_t i = 0; i < n; ++i)
            out[i] = halfToFloat(static_cast<std::uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8)));
        break;
    case Compression::Uniform8Bit:
        decodeUniform(bytes.data(), out);
        break;
    case Compression::Blockwise8Bit: {
        const std::size_t blocks = blockCount(n);
        const auto *codes = reinterpret_cast<const std::int8_t *>(bytes.data() + 4 * blocks);
        for (std::size_t b = 0; b < blocks; ++b) {
            const float scale = getF32(bytes.data() + 4 * b) / 127.0F;
            const std::size_t begin = b * BlockwiseBlockElements, end = std::min(n, begin + BlockwiseBlockElements);
            for (std::size_t i = begin; i < end; ++i)
                out[i] = static_cast<float>(codes[i]) * scale;
        }
        break;
    }
    case Compression::TopK4Bit:
        sparse::decodeTopK(bytes, out);
        break;
    case Compression::SizeAdaptive:
    case Compression::SparseFp16:
        break;
    }
}

} // namespace dedloc
