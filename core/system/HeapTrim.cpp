#include "system/HeapTrim.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace dedloc {

HeapFigures heapFigures()
{
    HeapFigures f;
#if defined(__GLIBC__)
    const auto m = mallinfo2();
    f.held = m.arena + m.hblkhd;
    f.inUse = m.uordblks + m.hblkhd;
#endif
    return f;
}

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
