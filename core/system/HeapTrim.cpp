#include "system/HeapTrim.h"

#include <cstdlib> // defines __GLIBC__ where the C library is glibc's

#if defined(__GLIBC__)
#include <malloc.h>
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
