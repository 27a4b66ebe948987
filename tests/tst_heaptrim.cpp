// Giving the allocator's free memory back (core/system/HeapTrim.h): freed blocks held between live
// ones stay resident until releaseFreeHeap(), in the main arena and in a thread's arena;
// HeapTrimmer trims at most once a period; memoryUsage() tells memory in use from what is resident.
#include "system/HeapTrim.h"

#include <QTest>

#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

using namespace dedloc;

namespace {

constexpr std::size_t MiB = 1024 * 1024;

std::size_t residentBytes()
{
    return static_cast<std::size_t>(memoryUsage().residentBytes);
}

// 1 600 blocks of 64 KiB (100 MiB, each below glibc's mapping threshold, so from the arena),
// touched, each followed by a small block that stays: the big ones, freed, cannot merge into the
// arena's top. Returns the small ones.
std::vector<void *> fragmentedFree()
{
    std::vector<void *> big, pins;
    for (int i = 0; i < 1600; ++i) {
        big.push_back(std::malloc(64 * 1024));
        std::memset(big.back(), 1, 64 * 1024);
        pins.push_back(std::malloc(64));
    }
    for (void *p : big)
        std::free(p);
    return pins;
}

} // namespace

class TestHeapTrim final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void freedBlocksBetweenLiveOnesLeaveTheProcessOnlyWhenTrimmed()
    {
#if !defined(__GLIBC__)
        QSKIP("the allocator is not glibc's: releaseFreeHeap() does nothing");
#endif
        for (const bool onAThread : {false, true}) {
            std::vector<void *> pins;
            if (onAThread)
                std::thread([&] { pins = fragmentedFree(); }).join(); // that thread's arena
            else
                pins = fragmentedFree();
            const auto held = residentBytes();
            QVERIFY(releaseFreeHeap());
            const auto trimmed = residentBytes();
            qInfo("%s: resident %.1f MiB after the frees, %.1f MiB after the trim", onAThread ? "thread" : "main",
                  double(held) / MiB, double(trimmed) / MiB);
            QVERIFY2(held > trimmed + 80 * MiB, qPrintable(QStringLiteral("%1 -> %2 bytes").arg(held).arg(trimmed)));
            for (void *p : pins)
                std::free(p);
        }
    }

    // In use counts live blocks only: 100 MiB freed between live ones leave it at once, while they
    // stay resident until a trim.
    void memoryInUseFollowsTheFreesAndResidentTheTrims()
    {
#if !defined(__GLIBC__)
        QSKIP("the allocator is not glibc's: the heap in use is unknown");
#endif
        releaseFreeHeap();
        const auto before = memoryUsage();
        if (before.heapInUseBytes < 0)
            QSKIP("glibc older than 2.33 (no mallinfo2): the heap in use is unknown");
        QVERIFY(before.residentBytes > 0 && before.heapInUseBytes > 0);
        std::vector<void *> big, pins;
        for (int i = 0; i < 1600; ++i) {
            big.push_back(std::malloc(64 * 1024));
            std::memset(big.back(), 1, 64 * 1024);
            pins.push_back(std::malloc(136)); // a size the other case's freed pins cannot serve
        }
        const auto allocated = memoryUsage();
        for (void *p : big)
            std::free(p);
        const auto freed = memoryUsage();
        releaseFreeHeap();
        const auto trimmed = memoryUsage();
        qInfo("in use / resident MiB: %.1f / %.1f before, %.1f / %.1f allocated, %.1f / %.1f freed, %.1f / %.1f trimmed",
              double(before.heapInUseBytes) / MiB, double(before.residentBytes) / MiB,
              double(allocated.heapInUseBytes) / MiB, double(allocated.residentBytes) / MiB,
              double(freed.heapInUseBytes) / MiB, double(freed.residentBytes) / MiB,
              double(trimmed.heapInUseBytes) / MiB, double(trimmed.residentBytes) / MiB);
        const long long block = 100 * static_cast<long long>(MiB);
        QVERIFY(allocated.heapInUseBytes >= before.heapInUseBytes + block);
        QVERIFY(allocated.residentBytes >= before.residentBytes + block * 9 / 10);
        QVERIFY(freed.heapInUseBytes <= allocated.heapInUseBytes - block);
        QVERIFY(freed.residentBytes >= allocated.residentBytes - block / 10);
        QVERIFY(trimmed.residentBytes <= freed.residentBytes - block * 8 / 10);
        for (void *p : pins)
            std::free(p);
    }

    void theTrimmerTrimsAtMostOncePerPeriod()
    {
        HeapTrimmer trimmer(30.0);
        QVERIFY(trimmer.due(1000.0)); // the first call
        QVERIFY(!trimmer.due(1000.0));
        QVERIFY(!trimmer.due(1029.9));
        QVERIFY(trimmer.due(1030.0));
        QVERIFY(!trimmer.due(1045.0));
        QVERIFY(trimmer.due(1061.0));
    }
};

QTEST_MAIN(TestHeapTrim)
#include "tst_heaptrim.moc"
