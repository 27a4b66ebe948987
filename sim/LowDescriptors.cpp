#include "LowDescriptors.h"

#include <algorithm>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dedloc::sim {

namespace {
thread_local LowDescriptors::Claim *t_claim = nullptr;
}

LowDescriptors::Claim::Claim(LowDescriptors &low) : m_low(low), m_outer(t_claim) { t_claim = this; }

LowDescriptors::Claim::~Claim() { t_claim = m_outer; }

int LowDescriptors::claimed(int fd)
{
    if (fd < 0 || t_claim == nullptr)
        return fd;
    const int low = t_claim->m_low.moveOnto(fd);
    t_claim->m_moved += low != fd ? 1 : 0;
    return low;
}

// `fd` moved onto the lowest held descriptor (its close-on-exec flag kept); `fd` itself when
// none is held or the move fails.
int LowDescriptors::moveOnto(int fd)
{
    if (m_held.empty() || fd < m_held.front())
        return fd;
    const int low = m_held.front();
    const int flags = ::fcntl(fd, F_GETFD);
    if (::dup2(fd, low) < 0) // closes the held /dev/null descriptor in the same call
        return fd;
    m_held.erase(m_held.begin());
    if (flags >= 0)
        (void)::fcntl(low, F_SETFD, flags);
    ::close(fd);
    return low;
}

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

} // namespace dedloc::sim

// The C library's socket() and pipe(), moved onto held descriptors for a thread holding a claim.
extern "C" int socket(int domain, int type, int protocol)
{
    using Call = int (*)(int, int, int);
    static const auto real = reinterpret_cast<Call>(::dlsym(RTLD_NEXT, "socket"));
    return dedloc::sim::LowDescriptors::claimed(real(domain, type, protocol));
}

extern "C" int pipe(int fds[2])
{
    using Call = int (*)(int *);
    static const auto real = reinterpret_cast<Call>(::dlsym(RTLD_NEXT, "pipe"));
    const int rc = real(fds);
    if (rc == 0) {
        fds[0] = dedloc::sim::LowDescriptors::claimed(fds[0]);
        fds[1] = dedloc::sim::LowDescriptors::claimed(fds[1]);
    }
    return rc;
}
