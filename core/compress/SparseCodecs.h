#pragma once
// The sparse codecs of compress/Compression.h (TopK4Bit, SparseFp16), internal to it: the
// formats, bounds and error guarantees are documented there. Torch-free, thread-safe (no state).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dedloc::sparse {

// Bytes of TopK4Bit for `elements` values: per block of BlockwiseBlockElements a 4-byte scale
// and 2 bytes for each kept element.
[[nodiscard]] std::size_t topKBytes(std::size_t elements);
// Elements kept in a block of `blockElements` (> 0): ceil(blockElements * TopKKeptPerBlock / 4096).
[[nodiscard]] std::size_t keptInBlock(std::size_t blockElements);
void encodeTopK(std::span<const float> values, std::span<std::uint8_t> out);
// `bytes` has exactly topKBytes(out.size()) bytes. Throws dedloc::Error for a scale that is not
// finite and >= 0, an index past its block, a code of -8, or two nonzero codes at one index.
void decodeTopK(std::span<const std::uint8_t> bytes, std::span<float> out);

// The largest SparseFp16 encoding of `elements` values (every element nonzero), and the least
// (every element zero: the block counts alone).
[[nodiscard]] std::size_t sparseFp16MaxBytes(std::size_t elements);
[[nodiscard]] std::size_t sparseFp16LeastBytes(std::size_t elements);
[[nodiscard]] std::vector<std::uint8_t> encodeSparseFp16(std::span<const float> values);
// The length of the SparseFp16 encoding of `elements` values at the start of `bytes`, read from
// its block counts. Throws dedloc::Error for a count above its block or bytes that end early.
[[nodiscard]] std::size_t sparseFp16Length(std::span<const std::uint8_t> bytes, std::size_t elements);
// `bytes` is exactly one encoding of out.size() values. Throws dedloc::Error for a bad length,
// indices not strictly increasing or past their block, or a value that is not a finite half.
void decodeSparseFp16(std::span<const std::uint8_t> bytes, std::span<float> out);

} // namespace dedloc::sparse
