#pragma once
// The monitor's kept checkpoints: after each state download the monitor saves its checkpoint
// (train/Checkpoint.h keeps the newest and the one before in the run directory); the archive
// keeps a copy of it per epoch, "epoch-<8 digits>.ddlc", and removes the oldest beyond `keep`,
// so a lead can go back several state refreshes (a run that diverged, a bad release) while
// the disk use stays bounded. Copies are hard links when the file system allows (the store
// renames its files, it never rewrites them in place), else real copies.
// Torch-free: it moves files, it does not read them.
//
// Errors: add() throws dedloc::Error naming the file (full disk, unwritable directory); the
// archive is then as before (a failed copy leaves no partial file behind under the final name).
// Thread-safety: one writer; list() may run in any thread (it reads the directory).
#include <cstdint>
#include <filesystem>
#include <vector>

namespace dedloc {

struct ArchivedCheckpoint {
    long epoch = 0;
    std::filesystem::path file;
    std::uintmax_t bytes = 0;
    double modified = 0.0; // Unix seconds
};

class CheckpointArchive final {
  public:
    // keep >= 1. The directory is created on first add().
    CheckpointArchive(std::filesystem::path directory, int keep);

    // Archives `checkpoint` (a complete checkpoint file) as the state of `epoch`, then prunes.
    // Returns the archived path. Archiving an epoch that is already there replaces it.
    std::filesystem::path add(const std::filesystem::path &checkpoint, long epoch);
    // Archived checkpoints, oldest epoch first. Files of other names are ignored.
    [[nodiscard]] std::vector<ArchivedCheckpoint> list() const;
    [[nodiscard]] const std::filesystem::path &directory() const { return m_directory; }
    [[nodiscard]] int keep() const { return m_keep; }

    [[nodiscard]] static std::filesystem::path fileName(long epoch); // "epoch-00000012.ddlc"

  private:
    std::filesystem::path m_directory;
    int m_keep;
};

} // namespace dedloc
