#pragma once
// The bytes of a checkpoint file, without libtorch (train/Checkpoint.h has the format): the
// prefix a writer puts before the tensor data, and the reader's checks of a whole file, which
// give the meta and where each tensor's fp32 values lie. Kept apart from Checkpoint.cpp so that
// the parser of files a stranger may hand over is fuzzed without compiling libtorch's headers
// (bench/fuzz: clang in C++20 mode cannot compile them).
// Threads: any. Errors: dedloc::Error, below.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dedloc {

inline constexpr std::size_t CheckpointTrailerBytes = 64; // SHA-256, hex, of every byte before it

// One tensor of a checkpoint: its values are `bytes` bytes of fp32 at `offset` of the file.
struct CheckpointEntry {
    std::string name;
    std::vector<std::int64_t> shape; // every dimension >= 0; bytes == 4 x their product
    std::size_t offset = 0;          // from the first byte of the file
    std::size_t bytes = 0;
};

struct CheckpointLayout {
    nlohmann::json meta;
    std::vector<CheckpointEntry> tensors;
};

// Magic, header length and `header` (the JSON text): what a file holds before its tensor data.
[[nodiscard]] std::string checkpointPrefix(const std::string &header);

// Checks a whole file's bytes in this order: magic and size, the trailer's SHA-256 (before any
// other byte is trusted), the header's length, JSON (at most 64 levels deep), "meta" and
// "tensors", and each tensor's shape (at most 2^40 values), size and place inside the file.
// Throws dedloc::Error "<where> is truncated or not a DeDLOC checkpoint", "... is corrupt ...",
// "... has a malformed header: ..." or "... is malformed: ...".
[[nodiscard]] CheckpointLayout parseCheckpoint(std::string_view data, const std::string &where);

} // namespace dedloc
