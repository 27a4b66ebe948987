#pragma once
// Crash-safe file replacement: data goes to "<target>.tmp-<pid>" in the same directory, is
// fsync'ed, then renamed over the target and the directory fsync'ed (POSIX rename is atomic).
// On any failure (ENOSPC, EFBIG, EIO, ...) the temporary file is removed, the target is left
// untouched and dedloc::Error says what failed and why. Not thread-safe; one writer per target.
#include <cstddef>
#include <filesystem>
#include <string>

namespace dedloc {

class AtomicFileWriter final {
public:
    explicit AtomicFileWriter(std::filesystem::path target);
    ~AtomicFileWriter(); // removes the temporary file unless commit() succeeded
    AtomicFileWriter(const AtomicFileWriter &) = delete;
    AtomicFileWriter &operator=(const AtomicFileWriter &) = delete;

    void write(const void *data, std::size_t bytes);
    // fsync + rename + directory fsync. After this the target holds exactly what was written.
    void commit();

    [[nodiscard]] std::size_t bytesWritten() const { return m_written; }

private:
    void fail(const std::string &what, int errnoValue);

    std::filesystem::path m_target;
    std::filesystem::path m_temp;
    int m_fd = -1;
    std::size_t m_written = 0;
    bool m_committed = false;
};

// Convenience for small files (manifests, settings).
void writeFileAtomically(const std::filesystem::path &target, const std::string &content);
[[nodiscard]] std::string readWholeFile(const std::filesystem::path &path);

} // namespace dedloc
