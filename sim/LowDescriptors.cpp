#include "LowDescriptors.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace dedloc::sim {

LowDescriptors::LowDescriptors(std::size_t count, int below) : m_below(below)
{
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &limit);
    }
    take(count);
}

void LowDescriptors::take(std::size_t count)
{
    while (m_held.size() < count) {
        const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            break;
        if (fd >= m_below) {
            ::close(fd);
            break;
        }
        m_held.push_back(fd);
    }
    std::sort(m_held.begin(), m_held.end());
}

void LowDescriptors::refill() { take(static_cast<std::size_t>(m_below)); }

LowDescriptors::~LowDescriptors()
{
    for (const int fd : m_held)
        ::close(fd);
}

void LowDescriptors::release(std::size_t count)
{
    const std::size_t n = std::min(count, m_held.size());
    for (std::size_t i = 0; i < n; ++i)
        ::close(m_held[i]);
    m_held.erase(m_held.begin(), m_held.begin() + static_cast<long>(n));
}

long LowDescriptors::openNow()
{
    std::error_code ec;
    long n = 0;
    for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec))
        ++n;
    return ec ? -1 : n;
}

} // namespace dedloc::sim
