#include "system/HeapTrim.h"

#include <cstdlib> // defines __GLIBC__ where the C library is glibc's
#include <fstream>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <unistd.h>
#endif

namespace dedloc {

bool releaseFreeHeap()
{
#if defined(__GLIBC__)
    return malloc_trim(0) != 0;
#else
    return false;
#endif
}

MemoryUsage memoryUsage()
{
    MemoryUsage usage;
#if defined(__linux__)
    // statm: sizes in pages; the second is the resident set.
    std::ifstream statm("/proc/self/statm");
    long long pages = 0, resident = 0;
    if (statm >> pages >> resident)
        usage.residentBytes = resident * static_cast<long long>(sysconf(_SC_PAGESIZE));
#endif
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    const struct mallinfo2 info = mallinfo2();
    usage.heapInUseBytes = static_cast<long long>(info.uordblks + info.hblkhd);
#endif
    return usage;
}

bool HeapTrimmer::due(double now)
{
    if (m_trimmed && now - m_last < m_period)
        return false;
    m_trimmed = true;
    m_last = now;
    releaseFreeHeap();
    return true;
}

} // namespace dedloc
