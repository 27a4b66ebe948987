#pragma once
// Caps the size of files this process may write (RLIMIT_FSIZE) and ignores SIGXFSZ, so that a
// write past the cap fails with EFBIG like a full disk, and a write across it stops at the cap
// (a short write); restores both on destruction. For tests of writers that must survive a full
// disk.
#include <algorithm>
#include <csignal>

#include <sys/resource.h>

namespace dedloc::test {

class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes)
    {
        m_ok = ::getrlimit(RLIMIT_FSIZE, &m_saved) == 0;
        m_oldHandler = std::signal(SIGXFSZ, SIG_IGN);
        // Lower only the soft limit: an unprivileged process could not raise the hard one again.
        const rlimit limit{m_saved.rlim_max == RLIM_INFINITY ? bytes : std::min(bytes, m_saved.rlim_max),
                           m_saved.rlim_max};
        m_ok = m_ok && ::setrlimit(RLIMIT_FSIZE, &limit) == 0;
    }
    ~FileSizeLimit()
    {
        ::setrlimit(RLIMIT_FSIZE, &m_saved);
        std::signal(SIGXFSZ, m_oldHandler);
    }
    FileSizeLimit(const FileSizeLimit &) = delete;
    FileSizeLimit &operator=(const FileSizeLimit &) = delete;
    [[nodiscard]] bool ok() const { return m_ok; }

private:
    rlimit m_saved{};
    void (*m_oldHandler)(int) = SIG_DFL;
    bool m_ok = false;
};

} // namespace dedloc::test
