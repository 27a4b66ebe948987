#pragma once
// A reader of the safetensors format for the tests, written from Hugging Face's safetensors
// specification (the format's README, "Format") and independent of core/eval/SafeTensors:
//   8 bytes  N, u64 little-endian; N bytes of JSON header; then the byte buffer.
// It checks what the specification requires of a file that a loader accepts: N within the file,
// a header that is a JSON object starting with '{' (trailing spaces allowed), "__metadata__" a
// map of strings to strings, every other entry {"dtype", "shape", "data_offsets": [begin, end]}
// with a known dtype, non-negative dimensions and end - begin = elements * dtype size, and the
// entries' byte ranges, in offset order, covering the buffer exactly: no gap, no overlap, nothing
// past its end or after the last one.
// Errors: dedloc::Error naming the file and the fault. Test helper: call from the test's thread.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace dedloc::test {

struct SafeTensorsEntry {
    std::string name;
    std::string dtype; // "F32", "F16", "I64", ...
    std::vector<std::int64_t> shape;
    std::uint64_t begin = 0, end = 0; // byte offsets into the buffer
    std::vector<float> values;        // decoded for F32 only
};

struct SafeTensorsFile {
    std::uint64_t headerBytes = 0; // N
    std::uint64_t dataStart = 0;   // 8 + N: the buffer's offset in the file
    std::map<std::string, std::string> metadata;
    std::vector<SafeTensorsEntry> tensors; // in the header's order

    // The entry named `name`, or nullptr.
    [[nodiscard]] const SafeTensorsEntry *find(const std::string &name) const;
};

[[nodiscard]] SafeTensorsFile readSafeTensors(const std::filesystem::path &file);

} // namespace dedloc::test
