// The dashboard panels (ui/panels/): what each shows for a given snapshot or GPU samples.
#include "RunInfo.h"
#include "Settings.h"
#include "TestSupport.h"
#include "panels/ContributionPanel.h"
#include "panels/GpuPanel.h"
#include "panels/GpuRow.h"
#include "panels/JoinPage.h"
#include "panels/StatePanel.h"
#include "panels/SwarmPanel.h"
#include "run/RunManifest.h"

#include <QCheckBox>
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

// Two GPUs as GpuProbe::sampleAll gives them: an NVIDIA one with every reading, an AMD one
// (index 2: the third card) without power and fan.
std::vector<GpuSample> twoGpus()
{
    GpuSample g;
    g.vendor = GpuVendor::Nvidia;
    g.index = 0;
    g.name = "Fake GeForce 9000";
    g.utilisationPercent = 42.0;
    g.memoryUsedBytes = 3ULL << 30;
    g.memoryTotalBytes = 8ULL << 30;
    g.temperatureCelsius = 61.0;
    g.powerWatts = 123.456;
    g.fanPercent = 40.0;
    g.cpuUsagePercent = 25.0;
    g.cpuCount = 16;
    GpuSample a;
    a.vendor = GpuVendor::Amd;
    a.index = 2;
    a.name = "Fake Radeon 1";
    a.utilisationPercent = 7.0;
    a.memoryUsedBytes = 1ULL << 30;
    a.memoryTotalBytes = 16ULL << 30;
    a.temperatureCelsius = 48.0;
    a.cpuUsagePercent = 25.0;
    a.cpuCount = 16;
    return {g, a};
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

    // Every GPU is listed with its own readings and a tick that follows the choice it is given.
    void gpuPanelListsEveryGpu()
    {
        GpuPanel p;
        p.setChosen({0});
        p.update(twoGpus());
        QCOMPARE(p.title(), QString("GPU"));
        QCOMPARE(p.rowCount(), 2);
        QCOMPARE(p.headline(), QString("Training on Fake GeForce 9000")); // the GPU that trains
        QVERIFY(!p.findChild<QProgressBar *>("cpuUsage")->isVisibleTo(&p)); // the CPU does not train
        const auto *first = p.row(0);
        const auto *second = p.row(1);
        QCOMPARE(first->findChild<QProgressBar *>()->value(), 42);
        QCOMPARE(second->findChild<QProgressBar *>()->value(), 7);
        auto texts = labelTexts(*first);
        QVERIFY2(texts.contains("Fake GeForce 9000") && texts.contains("3.0 GiB of 8.0 GiB") &&
                     texts.contains(QString("61 °C")) && texts.contains("123 W") && texts.contains("40%"),
                 qPrintable(texts.join('|')));
        texts = labelTexts(*second);
        QVERIFY2(texts.contains("Fake Radeon 1") && texts.contains("1.0 GiB of 16.0 GiB") &&
                     texts.contains(QString("48 °C")) && !texts.contains("Power") && !texts.contains("Fan"),
                 qPrintable(texts.join('|'))); // unknown power and fan: not shown
        QCOMPARE(first->trainBox()->text(), QString("Train on GPU 0"));
        QCOMPARE(second->trainBox()->text(), QString("Train on GPU 2"));
        QVERIFY(first->trainBox()->isChecked());
        QVERIFY(!second->trainBox()->isChecked());

        p.setChosen({2, 0}); // from Settings: no signal, the ticks follow
        QVERIFY(first->trainBox()->isChecked() && second->trainBox()->isChecked());
        QCOMPARE(p.headline(), QString("Training on Fake GeForce 9000, Fake Radeon 1"));
        auto next = twoGpus();
        next[1].utilisationPercent = 99.0;
        p.update(next); // the same GPUs: the rows stay, the readings move
        QCOMPARE(p.row(1), second);
        QCOMPARE(second->findChild<QProgressBar *>()->value(), 99);
        QVERIFY(second->trainBox()->isChecked());
    }

    // A click emits the whole new choice; indices of GPUs not present now are kept.
    void gpuPanelClickEmitsTheChoice()
    {
        qRegisterMetaType<std::vector<int>>();
        GpuPanel p;
        p.setChosen({0, 5});
        p.update(twoGpus());
        QSignalSpy chosen(&p, &GpuPanel::chosenGpusChanged);
        p.row(1)->trainBox()->click(); // tick GPU 2
        QCOMPARE(chosen.count(), 1);
        QCOMPARE(chosen.last().at(0).value<std::vector<int>>(), (std::vector<int>{0, 2, 5}));
        QCOMPARE(p.chosen(), (std::vector<int>{0, 2, 5}));
        QTest::mouseClick(p.row(0)->trainBox(), Qt::LeftButton, {}, QPoint(4, p.row(0)->trainBox()->height() / 2));
        QCOMPARE(chosen.count(), 2); // untick GPU 0
        QCOMPARE(chosen.last().at(0).value<std::vector<int>>(), (std::vector<int>{2, 5}));
        QVERIFY(!p.row(0)->trainBox()->isChecked());
        QCOMPARE(p.headline(), QString("Training on Fake Radeon 1"));
    }

    // With GPUs but none ticked, the CPU trains and the panel says so.
    void gpuPanelNoneChosen()
    {
        GpuPanel p;
        p.setChosen({});
        p.update(twoGpus());
        QCOMPARE(p.headline(), QString("No GPU chosen: training on the CPU"));
        QCOMPARE(p.rowCount(), 2);
        QVERIFY(!p.row(0)->trainBox()->isChecked() && !p.row(1)->trainBox()->isChecked());
        auto *cpu = p.findChild<QProgressBar *>("cpuUsage");
        QVERIFY(cpu->isVisibleTo(&p));
        QCOMPARE(cpu->text(), QString("25% of 16 CPUs"));
        p.setChosen({3}); // a GPU that is not here: still the CPU
        QCOMPARE(p.headline(), QString("No GPU chosen: training on the CPU"));
    }

    void gpuPanelWithoutGpu()
    {
        GpuPanel p;
        p.update(twoGpus());
        GpuSample cpu;
        cpu.name = "CPU";
        cpu.cpuUsagePercent = 87.4;
        cpu.cpuCount = 2;
        p.update({cpu});
        QCOMPARE(p.rowCount(), 0);
        QCOMPARE(p.headline(), QString("Training on CPU"));
        QCOMPARE(p.title(), QString("CPU"));
        QCOMPARE(p.findChild<QProgressBar *>("cpuUsage")->value(), 87);
        QCOMPARE(p.findChild<QProgressBar *>("cpuUsage")->text(), QString("87% of 2 CPUs"));
        QVERIFY(p.findChildren<QCheckBox *>().isEmpty());
        const auto texts = labelTexts(p);
        QVERIFY(!texts.contains("Memory")); // no GPU rows
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
