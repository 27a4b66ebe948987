// The dashboard panels (ui/panels/): what each shows for a given snapshot or GPU sample.
#include "RunInfo.h"
#include "Settings.h"
#include "TestSupport.h"
#include "panels/ContributionPanel.h"
#include "panels/GpuPanel.h"
#include "panels/JoinPage.h"
#include "panels/StatePanel.h"
#include "panels/SwarmPanel.h"
#include "run/RunManifest.h"

#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace dedloc;
using namespace dedloc::ui;

namespace {

QStringList labelTexts(const QWidget &w)
{
    QStringList texts;
    for (const auto *l : w.findChildren<QLabel *>())
        if (l->isVisibleTo(&w) && !l->text().isEmpty())
            texts << l->text();
    return texts;
}

} // namespace

class TestPanels final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void contributionPanelShowsTheTimeSpentComputing()
    {
        ContributionPanel p;
        PeerSnapshot s;
        p.update(s);
        QCOMPARE(p.computingText(), QStringLiteral("not known yet"));
        s.computeUtilisation = 0.956;
        p.update(s);
        QCOMPARE(p.computingText(), QStringLiteral("96 % of the time"));
        s.computeUtilisation = 0.0;
        p.update(s);
        QCOMPARE(p.computingText(), QStringLiteral("0 % of the time"));
    }

    // What the monitor recorded, beside the peer's own count; the export waits for a record.
    void contributionPanelShowsTheMonitorsRecord()
    {
        ContributionPanel p;
        PeerSnapshot s;
        p.update(s);
        QCOMPARE(p.monitorCreditShown(), QStringLiteral("no monitor has answered yet"));
        QVERIFY(!p.findChild<QPushButton *>("exportRecord")->isEnabled());
        s.contributionRecord = "/tmp/contribution.csv";
        s.monitorCredit.monitorId = "mon";
        s.monitorCredit.samples = 64;
        s.monitorCredit.steps = 2;
        s.monitorCredit.ranges = {{4, 5}};
        s.ownCredit.samplesInRecordedSteps = 64;
        p.update(s);
        QCOMPARE(p.monitorCreditShown(), QStringLiteral("64 samples in 2 steps, through step 5: matches your record"));
        QVERIFY(p.findChild<QPushButton *>("exportRecord")->isEnabled());
    }

    void statePanelButtonFollowsState()
    {
        StatePanel p;
        auto *button = p.findChild<QPushButton *>("pauseResumeButton");
        QVERIFY(!button->isEnabled()); // Idle: nothing to pause
        QSignalSpy pause(&p, &StatePanel::pauseClicked);
        QSignalSpy resume(&p, &StatePanel::resumeClicked);
        PeerSnapshot s;
        s.state = PeerState::Training;
        s.deviceName = "cuda:0 Fake";
        p.update(s);
        QCOMPARE(button->text(), QString("Pause"));
        QCOMPARE(p.explanation(), QString("Computing gradients on cuda:0 Fake."));
        button->click();
        QCOMPARE(pause.count(), 1);
        s.state = PeerState::Error;
        s.stateDetail = "cannot reach the swarm; check the network, then Resume";
        p.update(s);
        QCOMPARE(p.title(), QString("Error"));
        QCOMPARE(p.explanation(), QString("cannot reach the swarm; check the network, then Resume"));
        QCOMPARE(button->text(), QString("Resume"));
        button->click();
        QCOMPARE(resume.count(), 1);
    }

    void gpuPanelNvidiaAndCpu()
    {
        GpuPanel p;
        GpuSample g;
        g.vendor = GpuVendor::Nvidia;
        g.name = "Fake GeForce 9000";
        g.utilisationPercent = 42.0;
        g.memoryUsedBytes = 3ULL << 30;
        g.memoryTotalBytes = 8ULL << 30;
        g.temperatureCelsius = 61.0;
        g.powerWatts = 123.456;
        p.update(g);
        QCOMPARE(p.headline(), QString("Fake GeForce 9000"));
        QCOMPARE(p.findChild<QProgressBar *>()->value(), 42);
        auto texts = labelTexts(p);
        QVERIFY2(texts.contains("3.0 GiB of 8.0 GiB"), qPrintable(texts.join('|')));
        QVERIFY(texts.contains(QString("61 °C")));
        QVERIFY(texts.contains("123 W"));

        GpuSample cpu;
        cpu.name = "CPU";
        cpu.cpuUsagePercent = 87.4;
        cpu.cpuCount = 2;
        p.update(cpu);
        QCOMPARE(p.headline(), QString("Training on CPU"));
        QCOMPARE(p.title(), QString("CPU"));
        QCOMPARE(p.findChild<QProgressBar *>()->value(), 87);
        QCOMPARE(p.findChild<QProgressBar *>()->text(), QString("87% of 2 CPUs"));
        texts = labelTexts(p);
        QVERIFY(!texts.contains("Memory")); // GPU rows hidden
    }

    void swarmPanelProgressAndChart()
    {
        SwarmPanel p;
        PeerSnapshot s;
        s.globalEpoch = 7;
        s.targetBatchSize = 4096;
        s.swarmSamplesAccumulated = 1024.0;
        s.etaSeconds = 90.0;
        s.trainers = 3;
        s.lossHistory = {{5, 8.0}, {6, 7.5}, {7, 7.25}};
        p.update(s);
        QCOMPARE(p.progressPercent(), 25);
        QCOMPARE(p.lossPoints(), 3);
        QVERIFY(labelTexts(p).contains("1 min"));
        s.swarmSamplesAccumulated = 9000.0; // extrapolation past the target: capped
        s.lossHistory.push_back({8, 7.0});
        p.update(s);
        QCOMPARE(p.progressPercent(), 100);
        QCOMPARE(p.findChild<QProgressBar *>()->format(), QString("9\u2009000 samples: target of 4\u2009096 reached"));
        QVERIFY(labelTexts(p).contains("now")); // not a time to wait for a batch already full
        QCOMPARE(p.lossPoints(), 4);
        s.targetBatchSize = 0; // not known yet: no division by zero
        p.update(s);
        QCOMPARE(p.progressPercent(), 0);
    }
    // The join page says whether the run is open or closed, and for a closed run where the
    // volunteer's token is or how to get one.
    void joinPageSaysWhetherTheRunIsClosed()
    {
        QTemporaryDir dir;
        auto settings = Settings::forTesting(dir.filePath(QStringLiteral("s.ini")));
        auto manifest = loadRunManifest(test::defaultManifest());
        QVERIFY(!manifest.closed); // the bundled run is open
        {
            JoinPage page(runInfoFromManifest(manifest), *settings);
            const auto texts = labelTexts(page).join('|');
            QVERIFY2(texts.contains(QStringLiteral("open: anyone may join")), qPrintable(texts));
        }
        manifest.closed = true;
        auto run = runInfoFromManifest(manifest);
        QVERIFY(QString::fromStdString(run.access).startsWith(QStringLiteral("closed:")));
        run.access = closedRunAccessText("/data/runs/r1/access.token", false);
        {
            JoinPage page(run, *settings);
            const auto texts = labelTexts(page).join('|');
            QVERIFY2(texts.contains(QStringLiteral("You have none yet")) && texts.contains(QStringLiteral("dedloc --print-peer-key"))
                         && texts.contains(QStringLiteral("/data/runs/r1/access.token")) && !texts.contains(QStringLiteral("open:")),
                     qPrintable(texts));
        }
        run.access = closedRunAccessText("/data/runs/r1/access.token", true);
        JoinPage page(run, *settings);
        const auto texts = labelTexts(page).join('|');
        QVERIFY2(texts.contains(QStringLiteral("Your token: /data/runs/r1/access.token")) && !texts.contains(QStringLiteral("none yet")),
                 qPrintable(texts));
    }
};

QTEST_MAIN(TestPanels)
#include "tst_panels.moc"
