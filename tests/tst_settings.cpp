// Settings (ui/Settings.h) in test mode: values round-trip through the INI file, changed() fires
// once per real change, bad stored values are clamped.
#include "Settings.h"

#include <QSignalSpy>
#include <QtTest>

using namespace dedloc;
using namespace dedloc::ui;

class TestSettings final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void defaults()
    {
        QTemporaryDir dir;
        auto s = Settings::forTesting(dir.filePath("s.ini"));
        QCOMPARE(s->autoRejoin(), false);
        QCOMPARE(s->caps().uploadBytesPerSecond, 0.0);
        QCOMPARE(s->pauseRules().quietPeriodSeconds, 15.0);
        QCOMPARE(s->pauseRules().pauseOnGpuGraphics, true);
        QCOMPARE(s->resumeTomorrowAt(), 8 * 3600);
        QCOMPARE(s->caps().computeShare, 1.0);
        QCOMPARE(s->caps().gpus, std::vector<int>{0}); // the first GPU, as before GPUs were chosen
        QCOMPARE(s->language(), QString()); // the system's
        s->setLanguage("bn");
        QCOMPARE(s->language(), QString("bn"));
        s->setLanguage("fr"); // not a language of the window: the system's
        QCOMPARE(s->language(), QString());
        QCOMPARE(s->pauseRules().pauseOnFullScreen, true);
        QCOMPARE(s->pauseRules().gpuTemperature.limit, 0.0); // no hardware limit until set
        QCOMPARE(s->pauseRules().limitGraceSeconds, 30.0);
    }

    void roundTripAndChangeSignal()
    {
        QTemporaryDir dir;
        const auto file = dir.filePath("s.ini");
        {
            auto s = Settings::forTesting(file);
            QSignalSpy changed(s.get(), &Settings::changed);
            s->setAutoRejoin(true);
            s->setAutoRejoin(true); // same value: no signal
            QCOMPARE(changed.count(), 1);
            ResourceCaps c;
            c.cpuThreads = 2;
            c.gpuMemoryFraction = 0.5;
            c.microBatchSize = 8;
            c.uploadBytesPerSecond = 1.5e6;
            c.downloadBytesPerSecond = 3e6;
            c.computeShare = 0.6;
            c.gpus = {2, 0};
            s->setCaps(c);
            QCOMPARE(changed.count(), 2); // one signal for the group
            s->setCaps(c);
            QCOMPARE(changed.count(), 2);
            AutoPauseRules r;
            r.listedApplications = {"blender", "steam"};
            r.pauseOnBattery = false;
            r.scheduleEnabled = true;
            r.schedule = *parseWeeklySchedule("Mon-Fri 22:00-07:00\nSat,Sun all day").schedule;
            r.quietPeriodSeconds = 30.0;
            r.pauseOnFullScreen = false;
            r.gpuTemperature = {83.0, 7.0};
            r.cpuTemperature = {95.0, 5.0};
            r.gpuPower = {220.0, 0.0};
            r.fanSpeed = {75.0, 0.0};
            r.limitGraceSeconds = 45.0;
            s->setPauseRules(r);
            QCOMPARE(changed.count(), 3);
            s->setLastJoinedRun("bn-albert-demo");
        }
        auto s = Settings::forTesting(file); // a new instance reads the file
        QSignalSpy changed(s.get(), &Settings::changed);
        QCOMPARE(s->autoRejoin(), true);
        QCOMPARE(s->lastJoinedRun(), QString("bn-albert-demo"));
        const auto c = s->caps();
        QCOMPARE(c.cpuThreads, 2);
        QCOMPARE(c.gpuMemoryFraction, 0.5);
        QCOMPARE(c.microBatchSize, 8);
        QCOMPARE(c.uploadBytesPerSecond, 1.5e6);
        QCOMPARE(c.downloadBytesPerSecond, 3e6);
        QCOMPARE(c.computeShare, 0.6);
        QCOMPARE(c.gpus, (std::vector<int>{0, 2}));
        const auto r = s->pauseRules();
        QCOMPARE(r.pauseOnFullScreen, false);
        QCOMPARE(r.gpuTemperature.limit, 83.0);
        QCOMPARE(r.gpuTemperature.hysteresis, 7.0);
        QCOMPARE(r.cpuTemperature.limit, 95.0);
        QCOMPARE(r.gpuPower.limit, 220.0);
        QCOMPARE(r.fanSpeed.limit, 75.0);
        QCOMPARE(r.limitGraceSeconds, 45.0);
        QCOMPARE(r.listedApplications, (std::vector<std::string>{"blender", "steam"}));
        QCOMPARE(r.pauseOnBattery, false);
        QCOMPARE(r.scheduleEnabled, true);
        QCOMPARE(formatWeeklySchedule(r.schedule), std::string("Mon-Fri 22:00-07:00\nSat-Sun all day"));
        QCOMPARE(r.quietPeriodSeconds, 30.0);
        // Writing back what was read changes nothing (INI strings compare equal).
        s->setCaps(c);
        s->setPauseRules(r);
        s->setAutoRejoin(true);
        QCOMPARE(changed.count(), 0);
    }

    void badStoredValuesAreClamped()
    {
        QTemporaryDir dir;
        const auto file = dir.filePath("s.ini");
        {
            QSettings raw(file, QSettings::IniFormat);
            raw.setValue("caps/cpuThreads", -4);
            raw.setValue("caps/gpuMemoryFraction", 7.0);
            raw.setValue("pause/scheduleStart", 999999); // the daily window of earlier versions
            raw.setValue("pause/quietPeriod", -3);
            raw.setValue("caps/computeShare", 0.01);
            raw.setValue("limits/gpuTemperature", 4);  // at or below its cooling margin (5): off
            raw.setValue("limits/graceSeconds", -10);
        }
        auto s = Settings::forTesting(file);
        QCOMPARE(s->caps().cpuThreads, 0);
        QCOMPARE(s->caps().gpuMemoryFraction, 1.0);
        QCOMPARE(s->pauseRules().schedule.windows.size(), std::size_t(1)); // became a daily window
        QCOMPARE(s->pauseRules().schedule.windows[0].startSeconds, 86399);
        QCOMPARE(int(s->pauseRules().schedule.windows[0].days), 0x7f);
        QCOMPARE(s->pauseRules().quietPeriodSeconds, 0.0);
        QCOMPARE(s->caps().computeShare, MinComputeShare);
        QCOMPARE(s->pauseRules().gpuTemperature.limit, 0.0);
        QCOMPARE(s->pauseRules().limitGraceSeconds, 0.0);
        AutoPausePolicy policy(s->pauseRules(), {}); // what is read is always a valid policy
        Q_UNUSED(policy);
    }

    // caps/gpus: "" is the CPU only (not the default), a change of the choice alone is one
    // change, and text that is not a list of indices reads as the default.
    void chosenGpus_data()
    {
        QTest::addColumn<QVariant>("stored"); // invalid: key missing
        QTest::addColumn<std::vector<int>>("gpus");
        QTest::newRow("missing: GPU 0") << QVariant() << std::vector<int>{0};
        QTest::newRow("empty: the CPU only") << QVariant(QString("")) << std::vector<int>{};
        QTest::newRow("one") << QVariant(QString("1")) << std::vector<int>{1};
        QTest::newRow("several, unsorted, spaces, repeated") << QVariant(QString(" 2, 0,2")) << std::vector<int>{0, 2};
        QTest::newRow("an unquoted list in the file") << QVariant(QStringList{"0", "3"}) << std::vector<int>{0, 3};
        QTest::newRow("not a number") << QVariant(QString("0,x")) << std::vector<int>{0};
        QTest::newRow("negative") << QVariant(QString("-1")) << std::vector<int>{0};
        QTest::newRow("commas only") << QVariant(QString(",")) << std::vector<int>{0};
    }
    void chosenGpus()
    {
        QFETCH(QVariant, stored);
        QFETCH(std::vector<int>, gpus);
        QTemporaryDir dir;
        const auto file = dir.filePath("s.ini");
        if (stored.isValid()) {
            QSettings raw(file, QSettings::IniFormat);
            raw.setValue("caps/gpus", stored);
        }
        auto s = Settings::forTesting(file);
        QCOMPARE(s->caps().gpus, gpus);
        ResourceCaps c = s->caps();
        s->setCaps(c); // every caps key in the file (a bad caps/gpus becomes "0")
        QCOMPARE(s->caps().gpus, gpus);
        QSignalSpy changed(s.get(), &Settings::changed);
        c.gpus = {};
        s->setCaps(c);
        QCOMPARE(changed.count(), gpus.empty() ? 0 : 1);
        QCOMPARE(s->caps().gpus, std::vector<int>{});
        QCOMPARE(Settings::forTesting(file)->caps().gpus, std::vector<int>{}); // "" survives a reread
        c.gpus = {3, 1};
        s->setCaps(c);
        QCOMPARE(Settings::forTesting(file)->caps().gpus, (std::vector<int>{1, 3}));
    }

    void aHandEditedScheduleThatDoesNotParseKeepsNoWindow()
    {
        QTemporaryDir dir;
        const auto file = dir.filePath("s.ini");
        {
            QSettings raw(file, QSettings::IniFormat);
            raw.setValue("pause/schedule", "Mon-Fry 18:00-08:00");
            raw.setValue("pause/scheduleEnabled", true);
        }
        auto s = Settings::forTesting(file);
        QVERIFY(s->pauseRules().scheduleEnabled);
        QVERIFY(s->pauseRules().schedule.windows.empty()); // then the policy says the schedule has no window
    }
};

QTEST_GUILESS_MAIN(TestSettings)
#include "tst_settings.moc"
