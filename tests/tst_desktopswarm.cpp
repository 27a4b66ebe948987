// The volunteer window against a real local swarm: a monitor and a trainer
// run as `dedloc` processes on loopback; the window drives an in-process SwarmPeer (the real
// PeerControl). Join reaches Training and takes part in averaged global steps; the tray's Pause
// gives Paused within 2 s and the samples counter stays frozen; Resume trains again.
#include "DesktopApp.h"
#include "EventLoopProbe.h"
#include "MainWindow.h"
#include "Settings.h"
#include "SwarmHarness.h"
#include "TrayController.h"
#include "panels/JoinPage.h"
#include "panels/StatePanel.h"
#include "peer/SwarmPeer.h"

#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>

using namespace dedloc;
using namespace dedloc::ui;
using namespace dedloc::test;

class TestDesktopSwarm final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void joinPauseResumeAgainstARealSwarm()
    {
        QTemporaryDir tmp;
        const std::filesystem::path root = tmp.path().toStdString();
        const auto manifest = writeSignedTinyRun(root, 256);
        SwarmHarness swarm(DEDLOC_APP, manifest, root / "peers");
        auto &monitor = swarm.startMonitor();
        auto &other = swarm.startPeer(QStringLiteral("other"), {QStringLiteral("--steps"), QStringLiteral("1000")});

        SwarmOptions o;
        o.manifest = manifest;
        o.dataDir = root / "window";
        o.name = "window";
        o.bootstrap = {"127.0.0.1:" + std::to_string(swarm.dhtPort())};
        o.threads = 1;
        o.progressPeriod = 0.3;
        o.matchmaking.window = 4.0;
        o.statusOut = nullptr;
        SwarmPeer peer(o);

        auto settings = Settings::forTesting(tmp.filePath(QStringLiteral("settings.ini")));
        RunInfo run;
        run.runId = "tiny-test";
        run.name = "tiny test run";
        DesktopApp::Options options;
        options.trayAvailable = 0;
        auto app = std::make_unique<DesktopApp>(peer, *settings, run, std::move(options));
        auto state = [&] { return app->window().statePanel()->title(); };
        app->start();
        QTest::mouseClick(app->window().joinPage()->joinButton(), Qt::LeftButton);

        QTRY_COMPARE_WITH_TIMEOUT(state(), QStringLiteral("Training"), 60000);
        // Takes part in averaged global steps with the other trainer.
        QTRY_VERIFY_WITH_TIMEOUT(peer.snapshot().session.stepsTakenPart >= 2, 120000);
        QVERIFY2(QString::fromStdString(peer.snapshot().lastRoundStatus).startsWith(QStringLiteral("averaged with 1")),
                 peer.snapshot().lastRoundStatus.c_str());
        QVERIFY(monitor.running() && other.running());

        // The GUI thread stays responsive while the real peer trains and averages in this process.
        const auto latency = measureEventLoop(5000);
        QVERIFY(latency.lateness.size() > 100);
        const double worstBlocked = percentile(latency.blocked, 1.0);
        qInfo("event-loop latency over %zu ticks while the real peer trains: p50 %.2f ms, p99 %.2f ms, max %.2f ms; "
              "without run-queue waits: p99 %.2f ms, max %.2f ms (schedstat %s)",
              latency.lateness.size(), percentile(latency.lateness, 0.5), percentile(latency.lateness, 0.99),
              percentile(latency.lateness, 1.0), percentile(latency.blocked, 0.99), worstBlocked,
              latency.schedstat ? "available" : "missing: raw figures");
        QVERIFY2(worstBlocked <= 250.0, qPrintable(QStringLiteral("the GUI thread was blocked for %1 ms").arg(worstBlocked)));

        app->tray().pauseAction()->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(state(), QStringLiteral("Paused"), 2000); // the 2 s promise
        QTest::qWait(2500); // a micro-batch in flight may still finish
        const auto frozen = peer.snapshot().session.samples;
        QTest::qWait(2000);
        QCOMPARE(peer.snapshot().session.samples, frozen);
        QCOMPARE(peer.snapshot().state, PeerState::Paused);

        app->tray().resumeAction()->trigger();
        // The swarm moved on meanwhile: the peer resynchronises (Syncing) before it trains.
        QTRY_VERIFY_WITH_TIMEOUT(state() != QStringLiteral("Paused"), 2000);
        QTRY_COMPARE_WITH_TIMEOUT(state(), QStringLiteral("Training"), 30000);
        QTRY_VERIFY_WITH_TIMEOUT(peer.snapshot().session.samples > frozen, 30000);

        app.reset();
        peer.stop();
        QCOMPARE(peer.snapshot().state, PeerState::Stopped);
    }
};

QTEST_MAIN(TestDesktopSwarm)
#include "tst_desktopswarm.moc"
