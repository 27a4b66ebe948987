#pragma once
// Measures how late the GUI thread's event loop serves a 10 ms timer (the GUI thread
// never waits on the core). Each tick's lateness is also given minus the time the thread spent
// runnable but not running (/proc/thread-self/schedstat field 2): on a shared 2-core machine
// other processes can keep the GUI thread off the CPU, which is not the GUI's doing.
// Header-only; GUI thread only.
#include <QElapsedTimer>
#include <QTimer>
#include <QtTest>

#include <algorithm>
#include <fstream>
#include <vector>

namespace dedloc::test {

// Nanoseconds this thread has spent runnable but not running; -1 if unknown.
inline long long runQueueWaitNs()
{
    std::ifstream in("/proc/thread-self/schedstat");
    long long onCpu = 0;
    long long waiting = -1;
    if (!(in >> onCpu >> waiting))
        return -1;
    return waiting;
}

inline double percentile(std::vector<double> v, double p)
{
    if (v.empty())
        return 0.0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, std::size_t(p * double(v.size())))];
}

struct EventLoopLatency {
    std::vector<double> lateness; // ms beyond the interval
    std::vector<double> blocked;  // ... minus the run-queue wait
    bool schedstat = false;
};

// Runs the event loop for `milliseconds` with a 10 ms probe timer and returns the latencies.
inline EventLoopLatency measureEventLoop(int milliseconds)
{
    constexpr int kIntervalMs = 10;
    EventLoopLatency r;
    QElapsedTimer clock;
    QTimer probe;
    probe.setTimerType(Qt::PreciseTimer);
    qint64 last = -1;
    long long lastWait = runQueueWaitNs();
    r.schedstat = lastWait >= 0;
    QObject::connect(&probe, &QTimer::timeout, [&] {
        const qint64 now = clock.nsecsElapsed();
        const long long wait = runQueueWaitNs();
        if (last >= 0) {
            const double late = std::max(0.0, double(now - last) / 1e6 - kIntervalMs);
            const double queued = (wait >= 0 && lastWait >= 0) ? double(wait - lastWait) / 1e6 : 0.0;
            r.lateness.push_back(late);
            r.blocked.push_back(std::max(0.0, late - queued));
        }
        last = now;
        lastWait = wait;
    });
    clock.start();
    probe.start(kIntervalMs);
    QTest::qWait(milliseconds);
    probe.stop();
    return r;
}

} // namespace dedloc::test
