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
//   TopK4Bit       sparse, low-bit (SparseLoCo, arXiv 2508.15706 section 3: top-k of each chunk,
//                  2-bit values, error feedback): per block of 4096 elements, the k =
//                  ceil(64 len / 4096) largest magnitudes (1/64 of the block, about 1.6%), after a
//                  4-byte scale s, each as a u16 = (index in the block << 4) | (q + 8), q in
//                  [-7, 7]; an element decodes to q s, every other one to 0. s is absmax(kept) / 7
//                  with the low 3 mantissa bits cleared, so q s is exact and encoding decoded
//                  values again gives the same values (the all-reduce relies on it: the error
//                  feedback compresses the whole vector, the round its parts). Errors: a kept
//                  element |x - q s| <= s / 2 (s <= absmax / 7); a dropped one loses all of x,
//                  at most the block's k-th largest magnitude. Lossy by design: meant for a
//                  pseudo-gradient with error feedback (compress/ErrorFeedback.h).
//                  4 + 2k bytes per block: 132 per 4096 elements (3.2% of fp32 bytes).
//   SparseFp16     variable length: per block of 4096 elements, a u16 count c, c u16 indices
//                  (strictly increasing, inside the block), c fp16 values; elements whose fp16 is
//                  +-0 are left out. What a reducer returns for TopK4Bit PARTs (resultCodec()):
//                  the average of sparse parts is sparse, but on no single 4-bit grid. Not a
//                  codec a run names.
//
// Inputs must be finite (the trainer's non-finite guard runs first): encode() throws
// dedloc::Error otherwise. decode() checks that the byte count is exactly what `elements` of
// that codec take before it reads anything, and throws dedloc::Error if not; it never allocates
// by what the bytes say. Hostile bytes can still decode to non-finite values (a NaN scale):
// reducers check the decoded shard before they use it. SparseFp16's length is read from its block
// counts (encodedLength) before anything is decoded. Thread-safe (no shared state).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dedloc {

// The codecs a run manifest may name ("compression", docs/MANIFEST.md).
enum class Compression { None, Fp16, Uniform8Bit, Blockwise8Bit, SizeAdaptive, TopK4Bit, SparseFp16 };

// The manifest's and the wire's spelling: "none", "fp16", "uniform8bit", "blockwise8bit",
// "size_adaptive", "topk4bit", "sparse_fp16" (the wire only).
[[nodiscard]] const char *compressionName(Compression c);
// The codec of a spelling above; nothing for any other string.
[[nodiscard]] std::optional<Compression> compressionFromName(std::string_view name);
// Every spelling a run may name (all but sparse_fp16), comma-separated (for error messages).
[[nodiscard]] std::string compressionChoices();

inline constexpr std::size_t BlockwiseBlockElements = 4096;
inline constexpr std::size_t SizeAdaptiveFp16Limit = 1U << 16;
inline constexpr std::size_t TopKKeptPerBlock = 64; // of BlockwiseBlockElements

// The codec of the RESULTs of a round whose PARTs use `codec`, and so of its averaged update:
// SparseFp16 for TopK4Bit, `codec` itself otherwise.
[[nodiscard]] Compression resultCodec(Compression codec);
// Elements that a round's shard and part boundaries are multiples of, so that each part's blocks
// are the whole vector's: BlockwiseBlockElements for TopK4Bit, 1 for the others.
[[nodiscard]] std::size_t codecAlignment(Compression codec);
// Whether the encoding's size depends on the values (SparseFp16).
[[nodiscard]] bool isVariableLength(Compression codec);

// The codec actually used for a tensor of `elements` (resolves SizeAdaptive).
[[nodiscard]] Compression effectiveCodec(Compression codec, std::size_t elements);
// Bytes of `elements` values; for a variable-length codec, the most they can take.
[[nodiscard]] std::size_t encodedBytes(Compression codec, std::size_t elements);
// The least bytes `elements` values can take: encodedBytes() but for SparseFp16 (all zeros: its
// block counts alone).
[[nodiscard]] std::size_t leastEncodedBytes(Compression codec, std::size_t elements);
// Bytes of the encoding of `elements` values at the start of `bytes`: encodedBytes() for a
// fixed-size codec (whatever `bytes` holds), read from the block counts for SparseFp16. Throws
// dedloc::Error when that encoding would run past the end of `bytes` or is malformed.
[[nodiscard]] std::size_t encodedLength(Compression codec, std::span<const std::uint8_t> bytes,
                                        std::size_t elements);

[[nodiscard]] std::vector<std::uint8_t> encode(Compression codec, std::span<const float> values);
// Same, into a buffer of exactly encodedBytes(codec, values.size()) bytes (e.g. a ZeroMQ
// message), saving a copy. Throws dedloc::Error if the size differs, or for a variable-length
// codec (use encode()).
void encodeInto(Compression codec, std::span<const float> values, std::span<std::uint8_t> out);
// `bytes` must be exactly one encoding of out.size() values (encodedLength()).
void decode(Compression codec, std::span<const std::uint8_t> bytes, std::span<float> out);

// IEEE binary16 conversions (round to nearest even; exposed for tests and the reducers).
[[nodiscard]] std::uint16_t floatToHalf(float value);
[[nodiscard]] float halfToFloat(std::uint16_t half);

} // namespace dedloc
