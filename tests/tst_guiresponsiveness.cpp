// The GUI thread is never blocked while training runs: the whole window
// against a fake peer that burns a CPU core in its own thread, with the bridge polling at 4 Hz
// and log lines arriving from the worker. A 10 ms QTimer on the GUI thread records how late each
// timeout comes, for 4 s, and prints p50/p99/max.
// What fails the test: a gap of more than 250 ms in which the GUI thread was running our code or
// waiting on something (a lock, I/O) - i.e. the lateness minus the time the kernel kept the
// runnable thread on its run queue (/proc/thread-self/schedstat, field 2, "time spent waiting on a
// runqueue"). On this shared 2-core machine other builds can keep a runnable thread off the CPU
// for 300 ms; that is the machine being busy, not the GUI thread being blocked. Both figures are
// printed; where schedstat is missing the raw lateness is used.
#include "DesktopApp.h"
#include "EventLoopProbe.h"
#include "FakePeer.h"
#include "LogModel.h"
#include "MainWindow.h"
#include "Settings.h"
#include "panels/StatePanel.h"
#include "util/Log.h"

#include <QElapsedTimer>
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

using namespace dedloc;
using namespace dedloc::ui;

namespace {

using dedloc::test::percentile;
using dedloc::test::runQueueWaitNs;

} // namespace

class TestGuiResponsiveness final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void eventLoopLatencyWhileTraining()
    {
        QTemporaryDir dir;
        auto settings = Settings::forTesting(dir.filePath("settings.ini"));
        test::FakePeer::Options po;
        po.burnCpu = true;
        po.stepMs = 50;
        test::FakePeer peer(po);
        RunInfo run;
        run.runId = "fake-run";
        run.name = "Fake run";
        DesktopApp::Options o;
        o.trayAvailable = 0; // real probes (GPU/CPU, /proc, battery) on purpose: they run on the GUI thread
        DesktopApp app(peer, *settings, run, std::move(o));
        app.start();
        app.bridge().join();
        QTRY_COMPARE_WITH_TIMEOUT(app.window().statePanel()->title(), QString("Training"), 10000);

        // A second worker logs in bursts, as the swarm's threads do.
        log::setMinimumLevel(log::Level::Debug);
        std::atomic<bool> stop{false};
        std::thread logger([&] {
            int n = 0;
            while (!stop.load()) {
                for (int i = 0; i < 50; ++i)
                    log::debug("swarm", "burst line " + std::to_string(n++));
                log::info("swarm", "progress line " + std::to_string(n));
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
        });

        constexpr int kIntervalMs = 10;
        std::vector<double> lateness; // ms beyond the interval
        std::vector<double> blocked;  // ... minus the run-queue wait
        QElapsedTimer clock;
        QTimer probe;
        probe.setTimerType(Qt::PreciseTimer);
        qint64 last = -1;
        long long lastWait = runQueueWaitNs();
        connect(&probe, &QTimer::timeout, this, [&] {
            const qint64 now = clock.nsecsElapsed();
            const long long wait = runQueueWaitNs();
            if (last >= 0) {
                const double late = std::max(0.0, (now - last) / 1e6 - kIntervalMs);
                const double queued = (wait >= 0 && lastWait >= 0) ? (wait - lastWait) / 1e6 : 0.0;
                lateness.push_back(late);
                blocked.push_back(std::max(0.0, late - queued));
            }
            last = now;
            lastWait = wait;
        });
        clock.start();
        probe.start(kIntervalMs);
        QTest::qWait(4000);
        probe.stop();
        stop = true;
        logger.join();

        QVERIFY(lateness.size() > 100);
        const double worstBlocked = *std::max_element(blocked.begin(), blocked.end());
        qInfo("event-loop latency over %zu ticks while training: p50 %.2f ms, p99 %.2f ms, max %.2f ms; "
              "without run-queue waits: p50 %.2f ms, p99 %.2f ms, max %.2f ms (schedstat %s; "
              "fake peer samples: %lld, log rows: %d)",
              lateness.size(), percentile(lateness, 0.5), percentile(lateness, 0.99), percentile(lateness, 1.0),
              percentile(blocked, 0.5), percentile(blocked, 0.99), worstBlocked,
              lastWait >= 0 ? "available" : "missing: raw figures", peer.samplesComputed(), int(app.log().rowCount()));
        QVERIFY(peer.samplesComputed() > 0);
        QVERIFY2(worstBlocked <= 250.0, qPrintable(QString("the GUI thread was blocked for %1 ms").arg(worstBlocked)));
    }
};

QTEST_MAIN(TestGuiResponsiveness)
#include "tst_guiresponsiveness.moc"
