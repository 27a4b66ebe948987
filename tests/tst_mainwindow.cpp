// The volunteer window end to end against a fake peer (tests/fakes/FakePeer.h), offscreen:
// Join reaches Training; the tray's Pause freezes the samples counter, Resume trains again; timed
// pauses end on the injected clock; a plain pause holds for two simulated hours; auto-pause from
// the probes; closing without a tray; auto-rejoin; settings reach the peer; the GPU panel's ticks
// reach the peer; screenshot.
#include "DesktopApp.h"
#include "FakePeer.h"
#include "MainWindow.h"
#include "PeersTableModel.h"
#include "Settings.h"
#include "SettingsDialog.h"
#include "TrayController.h"
#include "panels/ContributionPanel.h"
#include "panels/GpuPanel.h"
#include "panels/GpuRow.h"
#include "panels/JoinPage.h"
#include "panels/StatePanel.h"
#include "panels/SwarmPanel.h"

#include <QAction>
#include <QDoubleSpinBox>
#include <QImage>
#include <QPushButton>
#include <QSignalSpy>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QtTest>

#include <memory>

using namespace dedloc;
using namespace dedloc::ui;

namespace {

struct Harness {
    QTemporaryDir dir;
    std::unique_ptr<Settings> settings = Settings::forTesting(dir.filePath("settings.ini"));
    test::FakePeer peer;
    double unix = 1796032800.0; // the injected clock
    int localStart = 10 * 3600; // local time of day at `start`
    double start = 1796032800.0;
    bool onBattery = false;
    std::unique_ptr<DesktopApp> app;

    // The probe's answer: the CPU only unless a test gives GPUs.
    std::vector<GpuSample> gpus = {cpuSample()};

    static GpuSample cpuSample()
    {
        GpuSample s;
        s.name = "CPU";
        s.cpuUsagePercent = 50.0;
        s.cpuCount = 2;
        return s;
    }

    explicit Harness(int tray = 0, std::vector<GpuSample> withGpus = {})
    {
        if (!withGpus.empty())
            gpus = std::move(withGpus);
        RunInfo run;
        run.runId = "fake-run";
        run.name = "Fake run";
        run.lead = "Test lead";
        run.model = "ALBERT tiny";
        run.data = "corpus.txt";
        DesktopApp::Options o;
        o.trayAvailable = tray;
        o.bridge.snapshotIntervalMs = 50; // faster polling keeps the test short; same code path
        o.bridge.clock = [this] { return LocalClockReading{unix, int((localStart + long(unix - start)) % 86400)}; };
        o.bridge.gpuProbe = [this] { return gpus; };
        o.bridge.hostProbe = [this](HostObservation &h) { h.onBattery = onBattery; };
        app = std::make_unique<DesktopApp>(peer, *settings, run, std::move(o));
    }
    ~Harness()
    {
        app.reset();
        peer.stop();
    }
    QString state() const { return app->window().statePanel()->title(); }
    void join()
    {
        app->start();
        QTest::mouseClick(app->window().joinPage()->joinButton(), Qt::LeftButton);
    }
};

} // namespace

class TestMainWindow final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void joinReachesTraining()
    {
        Harness h;
        h.app->start();
        QVERIFY(!h.app->window().dashboardShown());
        QCOMPARE(h.state(), QString("Idle"));
        if (const auto keep = qEnvironmentVariable("DEDLOC_SCREENSHOT_JOIN"); !keep.isEmpty())
            QVERIFY(saveScreenshot(h.app->window(), keep));  // the join page, for the user guide
        QTest::mouseClick(h.app->window().joinPage()->joinButton(), Qt::LeftButton);
        QVERIFY(h.app->window().dashboardShown());
        QTRY_COMPARE_WITH_TIMEOUT(h.state(), QString("Training"), 10000);
        QCOMPARE(h.settings->lastJoinedRun(), QString("fake-run"));
        // The panels show the snapshot: samples counted, global steps reached, the loss chart fed.
        QTRY_VERIFY(h.app->bridge().snapshot().globalEpoch >= 2);
        QTRY_VERIFY(h.app->window().swarmPanel()->lossPoints() >= 2);
        QVERIFY(h.app->window().contributionPanel()->sessionSamplesText() != "0");
        QCOMPARE(h.app->window().gpuPanel()->headline(), QString("Training on CPU"));
        QCOMPARE(h.app->peers().rowCount(), 3);
    }

    void trayPauseFreezesSamplesAndResumeTrains()
    {
        Harness h;
        h.join();
        QTRY_COMPARE_WITH_TIMEOUT(h.state(), QString("Training"), 10000);
        QVERIFY(h.app->tray().pauseAction()->isEnabled());
        h.app->tray().pauseAction()->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(h.state(), QString("Paused"), 2000); // the 2 s promise
        QCOMPARE(h.app->window().statePanel()->explanation(), QString("Paused: paused by you."));
        const long long frozen = h.peer.samplesComputed();
        const auto shownFrozen = h.app->window().contributionPanel()->sessionSamplesText();
        QTest::qWait(600); // 30 micro-batches of the fake peer
        QCOMPARE(h.peer.samplesComputed(), frozen);
        QCOMPARE(h.app->window().contributionPanel()->sessionSamplesText(), shownFrozen);
        QVERIFY(h.app->tray().resumeAction()->isEnabled());
        QVERIFY(!h.app->tray().pauseAction()->isEnabled());

        h.app->tray().resumeAction()->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(h.state(), QString("Training"), 5000);
        QTRY_VERIFY(h.peer.samplesComputed() > frozen);
        QCOMPARE(h.peer.resumeCalls(), 1);
    }

    void pauseForOneHourEndsOnTheClock()
    {
        Harness h;
        h.join();
        QTRY_COMPARE_WITH_TIMEOUT(h.state(), QString("Training"), 10000);
        h.app->tray().pauseHourAction()->trigger();
        QTRY_COMPARE(h.state(), QString("Paused"));
        QCOMPARE(h.app->bridge().pauseDecision().cause, PauseCause::Timed);
        QCOMPARE(h.app->bridge().pauseDecision().resumesAt, h.start + 3600.0);
        h.unix += 3599.0;
        h.app->bridge().evaluatePolicy();
        QTest::qWait(200);
        QCOMPARE(h.state(), QString("Paused"));
        QCOMPARE(h.peer.resumeCalls(), 0);
        h.unix += 1.0;
        h.app->bridge().evaluatePolicy();
        QTRY_COMPARE_WITH_TIMEOUT(h.state(), QString("Training"), 5000);
        QCOMPARE(h.peer.resumeCalls(), 1);
    }

    void pauseUntilTomorrowEndsAtTheMorningTime()
    {
        Harness h;
        h.localStart = 22 * 3600; // 22:00 now; "until tomorrow" = 08:00 = +10 h
        h.join();
        QTRY_COMPARE_WITH_TIMEOUT(h.state(), QString("Training"), 10000);
        h.app->tray().pauseTomorrowAction()->trigger();
        QTRY_COMPARE(h.state(), QString("Paused"));
        QCOMPARE(h.app->bridge().pauseDecision().resumesAt - h.start, 10.0 * 3600);
        h.unix += 10.0 * 3600 - 1.0;
        h.app->bridge().evaluatePolicy();
        QCOMPARE(h.app->bridge().pauseDecision().paused, true);
        h.unix += 1.0;
        h.app->bridge().evaluatePolicy();
        QTRY_COMPARE_WITH_TIMEOUT(h.state(), QString("Training"), 5000);
    }

    void plainPauseHoldsAfterTwoSimulatedHours()
    {
        Harness h;
        h.join();
        QTRY_COMPARE_WITH_TIMEOUT(h.state(), QString("Training"), 10000);
        h.app->tray().pauseAction()->trigger();
        QTRY_COMPARE(h.state(), QString("Paused"));
        const long long frozen = h.peer.samplesComputed();
        for (int minute = 1; minute <= 120; ++minute) {
            h.unix += 60.0;
            h.app->bridge().evaluatePolicy();
        }
        QTest::qWait(300);
        QCOMPARE(h.unix - h.start, 7200.0);
        QCOMPARE(h.state(), QString("Paused"));
        QCOMPARE(h.peer.samplesComputed(), frozen);
        QCOMPARE(h.peer.resumeCalls(), 0);
        QCOMPARE(h.app->bridge().pauseDecision().cause, PauseCause::Manual);
    }

    void autoPauseOnBatteryThenQuietPeriod()
    {
        Harness h;
        h.join();
        QTRY_COMPARE_WITH_TIMEOUT(h.state(), QString("Training"), 10000);
        h.onBattery = true;
        h.app->bridge().evaluatePolicy();
        QTRY_COMPARE(h.state(), QString("Paused"));
        QVERIFY(h.app->window().statePanel()->explanation().contains("on battery power"));
        h.onBattery = false; // plugged in: wait the quiet period (15 s)
        h.app->bridge().evaluatePolicy();
        h.unix += 14.0;
        h.app->bridge().evaluatePolicy();
        QVERIFY(h.app->bridge().pauseDecision().paused);
        h.unix += 1.0;
        h.app->bridge().evaluatePolicy();
        QTRY_COMPARE_WITH_TIMEOUT(h.state(), QString("Training"), 5000);
    }

    void closeKeepsWindowWithoutTray()
    {
        Harness h;
        h.app->start();
        QVERIFY(h.app->window().isVisible());
        QVERIFY(h.app->window().noticeText().isEmpty());
        h.app->window().close();
        QVERIFY(h.app->window().isVisible());
        QVERIFY(h.app->window().noticeText().contains("no system tray"));
    }

    void closeHidesToTrayWhenOneExists()
    {
        Harness h(1);
        h.app->start();
        QSignalSpy hidden(&h.app->window(), &MainWindow::hiddenToTray);
        h.app->window().close();
        QVERIFY(!h.app->window().isVisible());
        QCOMPARE(hidden.count(), 1);
        h.app->tray().showAction()->trigger();
        QVERIFY(h.app->window().isVisible());
    }

    void autoRejoinJoinsOnStart()
    {
        Harness h;
        h.settings->setAutoRejoin(true);
        h.settings->setLastJoinedRun("fake-run");
        h.app->start();
        QVERIFY(h.app->bridge().joined());
        QVERIFY(h.app->window().dashboardShown());
        QTRY_COMPARE_WITH_TIMEOUT(h.state(), QString("Training"), 10000);
    }

    void noAutoRejoinForAnotherRun()
    {
        Harness h;
        h.settings->setAutoRejoin(true);
        h.settings->setLastJoinedRun("another-run");
        h.app->start();
        QVERIFY(!h.app->bridge().joined());
    }

    void settingsDialogReachesThePeer()
    {
        Harness h;
        auto chosen = h.settings->caps();
        chosen.gpus = {1}; // chosen in the GPU panel, not in the dialog
        h.settings->setCaps(chosen);
        SettingsDialog dialog(*h.settings);
        auto *upload = dialog.findChild<QDoubleSpinBox *>("upload");
        upload->setValue(512.0);
        dialog.findChild<QSpinBox *>("gpuTemperatureLimit")->setValue(80);
        dialog.findChild<QSpinBox *>("coolingMargin")->setValue(8);
        dialog.findChild<QSpinBox *>("fanLimit")->setValue(70);
        dialog.findChild<QSpinBox *>("computeShare")->setValue(50);
        dialog.findChild<QCheckBox *>("pauseOnFullScreen")->setChecked(false);
        auto *language = dialog.findChild<QComboBox *>("language");
        language->setCurrentIndex(language->findData(QString("bn")));
        dialog.apply();
        QCOMPARE(h.settings->caps().uploadBytesPerSecond, 512.0 * 1024);
        QCOMPARE(h.peer.caps().uploadBytesPerSecond, 512.0 * 1024);
        QCOMPARE(h.peer.caps().computeShare, 0.5); // the trainer rests as long as it computes
        QCOMPARE(h.peer.caps().gpus, std::vector<int>{1}); // saving the dialog keeps the chosen GPUs
        const auto rules = h.app->bridge().policy().rules();
        QCOMPARE(rules.gpuTemperature.limit, 80.0);
        QCOMPARE(rules.gpuTemperature.hysteresis, 8.0);
        QCOMPARE(rules.cpuTemperature.limit, 0.0); // left at "no limit"
        QCOMPARE(rules.fanSpeed.limit, 70.0);
        QCOMPARE(rules.pauseOnFullScreen, false);
        QCOMPARE(h.settings->language(), QString("bn")); // used at the next start

        // The weekly schedule: a mistake is shown under the text and changes nothing.
        auto *schedule = dialog.findChild<QPlainTextEdit *>("weeklySchedule");
        auto *scheduleError = dialog.findChild<QLabel *>("scheduleError");
        schedule->setPlainText("Mon-Fry 18:00-08:00");
        QVERIFY(scheduleError->isVisibleTo(&dialog));
        QVERIFY(scheduleError->text().contains("unknown day in \"Mon-Fry\""));
        dialog.apply();
        QVERIFY(h.app->bridge().policy().rules().schedule.windows.empty());
        schedule->setPlainText("Mon-Fri 18:00-08:00\nSat,Sun all day");
        QVERIFY(!scheduleError->isVisibleTo(&dialog));
        dialog.apply();
        QCOMPARE(formatWeeklySchedule(h.app->bridge().policy().rules().schedule), std::string("Mon-Fri 18:00-08:00\nSat-Sun all day"));
    }

    // Ticks in the window's GPU panel reach the peer's caps at once, other caps unchanged; a
    // choice made elsewhere (Settings) shows in the ticks.
    void gpuPanelTicksReachThePeer()
    {
        std::vector<GpuSample> two(2);
        for (int i = 0; i < 2; ++i) {
            two[i].vendor = GpuVendor::Nvidia;
            two[i].index = i;
            two[i].name = "Fake GPU " + std::to_string(i);
            two[i].utilisationPercent = 90.0;
            two[i].cpuUsagePercent = 10.0;
            two[i].cpuCount = 2;
        }
        Harness h(0, two);
        auto caps = h.settings->caps();
        caps.cpuThreads = 3;
        h.settings->setCaps(caps);
        h.join();
        QTRY_COMPARE_WITH_TIMEOUT(h.state(), QString("Training"), 10000);
        GpuPanel *panel = h.app->window().gpuPanel();
        QCOMPARE(panel->rowCount(), 2);
        QVERIFY(panel->row(0)->trainBox()->isChecked());
        QVERIFY(!panel->row(1)->trainBox()->isChecked());
        QCOMPARE(panel->headline(), QString("Training on Fake GPU 0"));
        QTest::mouseClick(panel->row(1)->trainBox(), Qt::LeftButton, {}, QPoint(4, panel->row(1)->trainBox()->height() / 2));
        QCOMPARE(h.peer.caps().gpus, (std::vector<int>{0, 1}));
        QCOMPARE(h.settings->caps().gpus, (std::vector<int>{0, 1}));
        QCOMPARE(h.peer.caps().cpuThreads, 3);
        panel->row(0)->trainBox()->click();
        panel->row(1)->trainBox()->click();
        QCOMPARE(h.peer.caps().gpus, std::vector<int>{});
        QCOMPARE(panel->headline(), QString("No GPU chosen: training on the CPU"));
        caps = h.settings->caps();
        caps.gpus = {1};
        h.settings->setCaps(caps);
        QVERIFY(!panel->row(0)->trainBox()->isChecked());
        QVERIFY(panel->row(1)->trainBox()->isChecked());
        QCOMPARE(h.peer.caps().gpus, std::vector<int>{1});
        // The probe's next samples keep the rows and the ticks.
        QTest::qWait(300);
        QCOMPARE(panel->rowCount(), 2);
        QVERIFY(panel->row(1)->trainBox()->isChecked());
        QCOMPARE(panel->headline(), QString("Training on Fake GPU 1"));
    }

    void screenshot()
    {
        // A gaming PC with two NVIDIA boards; the peer trains on the first (the default).
        std::vector<GpuSample> boards(2);
        const char *names[] = {"NVIDIA GeForce RTX 3060", "NVIDIA GeForce GTX 1650"};
        for (int i = 0; i < 2; ++i) {
            auto &b = boards[i];
            b.vendor = GpuVendor::Nvidia;
            b.index = i;
            b.name = names[i];
            b.utilisationPercent = i == 0 ? 97.0 : 3.0;
            b.memoryUsedBytes = (i == 0 ? 5ULL : 1ULL) << 30;
            b.memoryTotalBytes = (i == 0 ? 12ULL : 4ULL) << 30;
            b.temperatureCelsius = i == 0 ? 71.0 : 44.0;
            b.powerWatts = i == 0 ? 162.0 : 12.0;
            b.fanPercent = i == 0 ? 58.0 : 30.0;
        }
        Harness h(0, boards);
        h.join();
        QTRY_COMPARE_WITH_TIMEOUT(h.state(), QString("Training"), 10000);
        const QString file = h.dir.filePath("window.png");
        QVERIFY(saveScreenshot(h.app->window(), file));
        const QImage image(file);
        QCOMPARE(image.size(), h.app->window().size() * h.app->window().devicePixelRatio());
        QVERIFY(!saveScreenshot(h.app->window(), h.dir.filePath("no-such-dir/x.png")));
        // DEDLOC_SCREENSHOT=path also keeps a picture of the window against the fake peer.
        if (const auto keep = qEnvironmentVariable("DEDLOC_SCREENSHOT"); !keep.isEmpty()) {
            QTRY_VERIFY_WITH_TIMEOUT(h.app->bridge().snapshot().globalEpoch >= 12, 20000);
            QVERIFY(saveScreenshot(h.app->window(), keep));
        }
    }
};

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
