#pragma once
// Checkpoint files and their rotation.
//
// File format (little-endian), version 1:
//   8 bytes  magic "DDLCKPT1"
//   8 bytes  u64 header length N
//   N bytes  header: JSON {"meta": {...}, "tensors": [{"name", "shape": [..], "offset", "bytes"}]}
//            offsets count from the first byte after the header; every tensor is fp32, contiguous
//   ...      tensor data
//   64 bytes SHA-256 (hex) of every byte before it
// A reader checks the trailer hash before it trusts anything, then checks each tensor's
// offset/bytes against the file size and its shape (bytes == 4 * numel) before allocating.
//
// Rotation (CheckpointStore): "checkpoint.ddlc" is the newest, "checkpoint.prev.ddlc" the one
// before. A save writes a temporary file and fsyncs it, then moves newest -> prev, then renames
// the temporary file into place: at every instant at least one complete, verified checkpoint
// exists. A failed save (full disk) leaves both files as they were and throws.
#include "train/Lamb.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

namespace dedloc {

struct Checkpoint {
    nlohmann::json meta;              // step, data position, RNG state, counters, run id, ...
    std::vector<NamedTensor> tensors; // CPU fp32
};

// The name a trainer's checkpoint gives model parameter `parameter` (a key of the model's
// named_parameters()): "param.<parameter>". The parameters come first, in registration order,
// then the optimizer's statistics as "optim.<name>" (train/Lamb.h), in local-update mode the outer
// momentum as "outer.momentum.<i>", and last, when the peer keeps one, the 1-D error-feedback
// residual "feedback.residual" (train/Trainer.h).
[[nodiscard]] inline std::string checkpointParameterName(const std::string &parameter) { return "param." + parameter; }

// Throws dedloc::Error (naming the file and the reason) on I/O failure.
void writeCheckpointFile(const std::filesystem::path &file, const Checkpoint &checkpoint);
// Throws dedloc::Error if the file is missing, truncated, corrupt or malformed.
[[nodiscard]] Checkpoint readCheckpointFile(const std::filesystem::path &file);

class CheckpointStore final {
public:
    explicit CheckpointStore(std::filesystem::path directory);

    [[nodiscard]] std::filesystem::path newestPath() const;
    [[nodiscard]] std::filesystem::path previousPath() const;

    void save(const Checkpoint &checkpoint);
    // The newest checkpoint that reads back intact; logs (category "ckpt") why a newer one was
    // refused and which one is used instead. A refused file is renamed to
    // "<name>.refused-<unix time>" (kept for inspection, out of the rotation). `accept` may refuse
    // a readable one (another run, another model shape) by throwing dedloc::Error; that counts
    // as refused too. Empty if none is usable.
    [[nodiscard]] std::optional<Checkpoint>
    loadNewestGood(const std::function<void(const Checkpoint &)> &accept = {});

private:
    std::filesystem::path m_directory;
};

} // namespace dedloc
