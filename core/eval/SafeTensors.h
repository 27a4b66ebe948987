#pragma once
// A writer of the safetensors format (Hugging Face's safetensors specification, the format's
// README "Format" section), torch-free, float32 only:
//   8 bytes   N, unsigned 64-bit little-endian: the size of the header
//   N bytes   a UTF-8 JSON object: {"__metadata__": {str: str}, "<name>": {"dtype": "F32",
//             "shape": [d0, d1, ...], "data_offsets": [begin, end]}, ...}, padded with spaces
//             (0x20) so that 8 + N is a multiple of 8 and the data starts 8-byte aligned
//   the data  every tensor's values, row-major, little-endian, one after the other with neither
//             gaps nor overlaps; offsets count in bytes from the first byte after the header
// Tensors are laid out in the order given, and the header lists them in that order after the
// metadata. A scalar has the shape [] and one value; a dimension may be 0.
//
// The file is replaced atomically (util/AtomicFile.h): a failed write leaves the previous file,
// if any, as it was.
// Errors: dedloc::Error naming the file, for I/O failures and for tensors the format cannot hold
// (values that do not fill the shape, an empty, repeated or reserved name, a negative dimension).
// Threads: a plain function; the tensors' values must not change while it runs.
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace dedloc {

struct SafeTensor {
    std::string name;
    std::vector<std::int64_t> shape; // elements per dimension, outermost first
    std::span<const float> values;   // row-major; product(shape) values
};

// Writes `tensors` with `metadata` (the header's "__metadata__"; Hugging Face's loaders expect
// {"format": "pt"} there) to `file`.
void writeSafeTensors(const std::filesystem::path &file, const std::vector<SafeTensor> &tensors,
                      const std::map<std::string, std::string> &metadata);

} // namespace dedloc
