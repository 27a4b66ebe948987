#pragma once
// Wire compression of gradient and state tensors (docs/PROTOCOL.md "Butterfly all-reduce data plane";
// DeDLOC section 3.2 and appendix; hivemind's quantisation codecs as the reference behaviour).
// Torch-free: flat float spans in, bytes out. All multi-byte values are little-endian.
//
//   None           4 bytes/element: the fp32 bits.
//   Fp16           2 bytes/element: IEEE 754 binary16, round to nearest even; |x| > 65504
//                  saturates to +-65504 (gradients never need infinities). Relative error
//                  <= 2^-11 for normal values.
//   Uniform8Bit    4 + 4 + 256*4 header (mean, scale, codebook) + 1 byte/element. Values are
//                  centred on their mean and binned uniformly over +-3 standard deviations
//                  (256 bins of 6 sigma / 256); each bin decodes to the mean of the values that
//                  fell into it (the codebook), so in-range errors are below one bin width and
//                  clipped tails decode to the mean of the clipped values.
//   Blockwise8Bit  per block of 4096 elements: 4-byte absmax scale + 1 signed byte/element,
//                  q = round(127 x / absmax); |error| <= absmax / 254 within each block.
//   SizeAdaptive   Fp16 for tensors of at most 2^16 elements, Uniform8Bit above (the codec
//                  mix of the later hivemind ALBERT runs).
//
// Inputs must be finite (the trainer's non-finite guard runs first): encode() throws
// dedloc::Error otherwise. decode() checks that the byte count is exactly what `elements` of
// that codec take before it reads anything, and throws dedloc::Error if not; it never allocates
// by what the bytes say. Hostile bytes can still decode to non-finite values (a NaN scale):
// reducers check the decoded shard before they use it. Thread-safe (no shared state).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dedloc {

// The codecs a run manifest may name ("compression", docs/MANIFEST.md).
enum class Compression { None, Fp16, Uniform8Bit, Blockwise8Bit, SizeAdaptive };

// The manifest's spelling: "none", "fp16", "uniform8bit", "blockwise8bit", "size_adaptive".
[[nodiscard]] const char *compressionName(Compression c);
// The codec of a spelling above; nothing for any other string.
[[nodiscard]] std::optional<Compression> compressionFromName(std::string_view name);
// Every spelling, comma-separated (for error messages).
[[nodiscard]] std::string compressionChoices();

inline constexpr std::size_t BlockwiseBlockElements = 4096;
inline constexpr std::size_t SizeAdaptiveFp16Limit = 1U << 16;

// The codec actually used for a tensor of `elements` (resolves SizeAdaptive).
[[nodiscard]] Compression effectiveCodec(Compression codec, std::size_t elements);
[[nodiscard]] std::size_t encodedBytes(Compression codec, std::size_t elements);

[[nodiscard]] std::vector<std::uint8_t> encode(Compression codec, std::span<const float> values);
// Same, into a buffer of exactly encodedBytes(codec, values.size()) bytes (e.g. a ZeroMQ
// message), saving a copy. Throws dedloc::Error if the size differs.
void encodeInto(Compression codec, std::span<const float> values, std::span<std::uint8_t> out);
void decode(Compression codec, std::span<const std::uint8_t> bytes, std::span<float> out);

// IEEE binary16 conversions (round to nearest even; exposed for tests and the reducers).
[[nodiscard]] std::uint16_t floatToHalf(float value);
[[nodiscard]] float halfToFloat(std::uint16_t half);

} // namespace dedloc
