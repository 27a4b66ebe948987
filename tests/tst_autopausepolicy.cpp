// Auto-pause and manual pauses (core/system/AutoPausePolicy.h) on an injected clock.
#include "system/AutoPausePolicy.h"

#include "TestSupport.h"

#include <QtTest>

using namespace dedloc;

Q_DECLARE_METATYPE(dedloc::AutoPauseRules)
Q_DECLARE_METATYPE(dedloc::HostObservation)

namespace {

// A clock the test moves by hand. Starts on 2026-11-30 10:00:00 local (= unix 1'796'032'800,
// the local offset does not matter to the policy).
struct FakeClock {
    double unix = 1796032800.0;
    int dayStart = 10 * 3600; // local seconds of day at `unix`
    double start = 1796032800.0;
    LocalClockReading read() const
    {
        const long elapsed = long(unix - start);
        return {unix, int((dayStart + elapsed) % 86400)};
    }
    LocalClock fn()
    {
        return [this] { return read(); };
    }
};

AutoPauseRules defaults()
{
    AutoPauseRules r;
    r.quietPeriodSeconds = 15.0;
    return r;
}

} // namespace

class TestAutoPausePolicy final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void eachRule_data()
    {
        QTest::addColumn<AutoPauseRules>("rules");
        QTest::addColumn<HostObservation>("observation");
        QTest::addColumn<int>("localTime"); // seconds of day
        QTest::addColumn<bool>("paused");
        QTest::addColumn<QString>("reason");

        const auto base = defaults();
        QTest::newRow("nothing holds") << base << HostObservation{} << 10 * 3600 << false << QString();

        HostObservation game;
        game.gpuGraphicsProcesses = {"witcher3.exe"};
        QTest::newRow("gpu graphics") << base << game << 10 * 3600 << true
                                      << QString("witcher3.exe is using the GPU for graphics");
        auto noGpuRule = base;
        noGpuRule.pauseOnGpuGraphics = false;
        QTest::newRow("gpu graphics, rule off") << noGpuRule << game << 10 * 3600 << false << QString();

        auto listed = base;
        listed.listedApplications = {"Blender", "steam"};
        HostObservation blender;
        blender.runningProcesses = {"bash", "blender", "kworker"};
        QTest::newRow("listed app (case-insensitive)")
            << listed << blender << 10 * 3600 << true << QString("Blender is running");
        HostObservation other;
        other.runningProcesses = {"bash", "blender-thumbnailer"};
        QTest::newRow("listed app not running") << listed << other << 10 * 3600 << false << QString();

        HostObservation battery;
        battery.onBattery = true;
        QTest::newRow("on battery") << base << battery << 10 * 3600 << true << QString("on battery power");
        auto noBattery = base;
        noBattery.pauseOnBattery = false;
        QTest::newRow("on battery, rule off") << noBattery << battery << 10 * 3600 << false << QString();

        auto night = base; // train only 22:00-07:00
        night.scheduleEnabled = true;
        night.scheduleStartSeconds = 22 * 3600;
        night.scheduleEndSeconds = 7 * 3600;
        QTest::newRow("outside schedule (day)")
            << night << HostObservation{} << 10 * 3600 << true << QString("outside the scheduled hours (22:00-07:00)");
        QTest::newRow("inside schedule (before midnight)")
            << night << HostObservation{} << 23 * 3600 << false << QString();
        QTest::newRow("inside schedule (after midnight)")
            << night << HostObservation{} << 3 * 3600 << false << QString();
        QTest::newRow("schedule end is exclusive")
            << night << HostObservation{} << 7 * 3600 << true << QString("outside the scheduled hours (22:00-07:00)");

        auto active = base;
        active.pauseWhenUserActive = true;
        active.userIdleThresholdSeconds = 120.0;
        HostObservation typing;
        typing.userIdleSeconds = 5.0;
        HostObservation away;
        away.userIdleSeconds = 600.0;
        HostObservation unknown; // idle time unknown: the rule cannot hold
        QTest::newRow("user active") << active << typing << 10 * 3600 << true << QString("you are using the computer");
        QTest::newRow("user away") << active << away << 10 * 3600 << false << QString();
        QTest::newRow("user idle unknown") << active << unknown << 10 * 3600 << false << QString();
        QTest::newRow("user active, rule off") << base << typing << 10 * 3600 << false << QString();

        HostObservation both = game;
        both.onBattery = true;
        QTest::newRow("first rule names the reason")
            << base << both << 10 * 3600 << true << QString("witcher3.exe is using the GPU for graphics");
    }

    void eachRule()
    {
        QFETCH(AutoPauseRules, rules);
        QFETCH(HostObservation, observation);
        QFETCH(int, localTime);
        QFETCH(bool, paused);
        QFETCH(QString, reason);
        FakeClock clock;
        clock.dayStart = localTime;
        AutoPausePolicy policy(rules, clock.fn());
        const auto d = policy.evaluate(observation);
        QCOMPARE(d.paused, paused);
        QCOMPARE(QString::fromStdString(d.reason), reason);
        QCOMPARE(d.cause, paused ? PauseCause::Automatic : PauseCause::None);
    }

    void quietPeriod_data()
    {
        QTest::addColumn<double>("quiet");
        QTest::newRow("default 15 s") << 15.0;
        QTest::newRow("60 s") << 60.0;
        QTest::newRow("0 s resumes at once") << 0.0;
    }

    void quietPeriod()
    {
        QFETCH(double, quiet);
        FakeClock clock;
        auto rules = defaults();
        rules.quietPeriodSeconds = quiet;
        AutoPausePolicy policy(rules, clock.fn());
        HostObservation game;
        game.gpuGraphicsProcesses = {"game"};
        QVERIFY(policy.evaluate(game).paused);

        clock.unix += 1.0; // the game quits
        auto d = policy.evaluate({});
        QCOMPARE(d.paused, quiet > 0.0);
        if (quiet > 0.0) {
            QCOMPARE(d.quietSecondsLeft, quiet);
            QVERIFY(QString::fromStdString(d.reason).startsWith("game is using the GPU"));
            clock.unix += quiet - 1.0;
            d = policy.evaluate({});
            QVERIFY(d.paused);
            QCOMPARE(d.quietSecondsLeft, 1.0);
            // The game comes back before the quiet period ends: the wait starts over.
            QVERIFY(policy.evaluate(game).paused);
            clock.unix += 0.5;
            QVERIFY(policy.evaluate({}).paused);
            clock.unix += quiet - 0.5;
            QVERIFY(policy.evaluate({}).paused);
            clock.unix += 0.5;
            d = policy.evaluate({});
            QVERIFY(!d.paused);
            QCOMPARE(d.cause, PauseCause::None);
        }
    }

    void manualPauseWins()
    {
        FakeClock clock;
        AutoPausePolicy policy(defaults(), clock.fn());
        policy.pauseManually();
        auto d = policy.evaluate({});
        QVERIFY(d.paused);
        QCOMPARE(d.cause, PauseCause::Manual);
        QCOMPARE(QString::fromStdString(d.reason), QString("paused by you"));

        // An automatic rule starting and ending underneath does not end the manual pause.
        HostObservation battery;
        battery.onBattery = true;
        QCOMPARE(policy.evaluate(battery).cause, PauseCause::Manual);
        clock.unix += 100.0;
        QCOMPARE(policy.evaluate({}).cause, PauseCause::Manual);

        // Resume while a rule holds: the rule keeps the peer paused and says why.
        QVERIFY(policy.evaluate(battery).paused);
        policy.resumeManually();
        d = policy.evaluate(battery);
        QVERIFY(d.paused);
        QCOMPARE(d.cause, PauseCause::Automatic);
        QCOMPARE(QString::fromStdString(d.reason), QString("on battery power"));

        // Resume with the rules clear: at once, no quiet period.
        policy.pauseManually();
        QCOMPARE(policy.evaluate({}).cause, PauseCause::Manual);
        policy.resumeManually();
        QVERIFY(!policy.evaluate({}).paused);
    }

    void plainPauseHoldsAfterTwoHours()
    {
        FakeClock clock;
        AutoPausePolicy policy(defaults(), clock.fn());
        policy.pauseManually();
        for (int minute = 0; minute <= 120; ++minute) {
            clock.unix += 60.0;
            const auto d = policy.evaluate({});
            QVERIFY2(d.paused && d.cause == PauseCause::Manual, qPrintable(QString("minute %1").arg(minute)));
        }
        QCOMPARE(clock.unix - clock.start, 121 * 60.0);
    }

    void timedPauseEndsOnTheClock()
    {
        FakeClock clock;
        AutoPausePolicy policy(defaults(), clock.fn());
        policy.pauseFor(3600.0);
        auto d = policy.evaluate({});
        QVERIFY(d.paused);
        QCOMPARE(d.cause, PauseCause::Timed);
        QCOMPARE(d.resumesAt, clock.start + 3600.0);
        QCOMPARE(QString::fromStdString(d.reason), QString("paused by you for 60 more min"));
        clock.unix += 3599.0;
        QVERIFY(policy.evaluate({}).paused);
        clock.unix += 1.0;
        d = policy.evaluate({});
        QVERIFY(!d.paused);
        QCOMPARE(d.cause, PauseCause::None);
    }

    void timedPauseEndsIntoAnActiveRule()
    {
        FakeClock clock;
        AutoPausePolicy policy(defaults(), clock.fn());
        policy.pauseFor(60.0);
        HostObservation battery;
        battery.onBattery = true;
        clock.unix += 61.0;
        const auto d = policy.evaluate(battery);
        QCOMPARE(d.cause, PauseCause::Automatic);
        QCOMPARE(QString::fromStdString(d.reason), QString("on battery power"));
    }

    void pauseUntilTomorrow_data()
    {
        QTest::addColumn<int>("nowOfDay");
        QTest::addColumn<int>("until");
        QTest::addColumn<double>("expectedSeconds");
        QTest::newRow("10:00 -> 08:00 tomorrow") << 10 * 3600 << 8 * 3600 << 22.0 * 3600;
        QTest::newRow("06:00 -> 08:00 today") << 6 * 3600 << 8 * 3600 << 2.0 * 3600;
        QTest::newRow("08:00 -> 08:00 tomorrow") << 8 * 3600 << 8 * 3600 << 24.0 * 3600;
        QTest::newRow("23:59:30 -> 00:00") << 86370 << 0 << 30.0;
    }

    void pauseUntilTomorrow()
    {
        QFETCH(int, nowOfDay);
        QFETCH(int, until);
        QFETCH(double, expectedSeconds);
        FakeClock clock;
        clock.dayStart = nowOfDay;
        AutoPausePolicy policy(defaults(), clock.fn());
        policy.pauseUntilLocalTime(until);
        auto d = policy.evaluate({});
        QCOMPARE(d.cause, PauseCause::Timed);
        QCOMPARE(d.resumesAt - clock.start, expectedSeconds);
        clock.unix += expectedSeconds - 1.0;
        QVERIFY(policy.evaluate({}).paused);
        clock.unix += 1.0;
        QVERIFY(!policy.evaluate({}).paused);
    }

    void badInputIsRefused()
    {
        FakeClock clock;
        AutoPausePolicy policy(defaults(), clock.fn());
        QVERIFY(test::errorOf([&] { policy.pauseFor(0.0); }).contains("positive duration"));
        QVERIFY(test::errorOf([&] { policy.pauseFor(-5.0); }).contains("positive duration"));
        QVERIFY(test::errorOf([&] { policy.pauseUntilLocalTime(86400); }).contains("0..86399"));
        auto bad = defaults();
        bad.scheduleStartSeconds = -1;
        QVERIFY(test::errorOf([&] { policy.setRules(bad); }).contains("local times of day"));
        bad = defaults();
        bad.quietPeriodSeconds = -1.0;
        QVERIFY(test::errorOf([&] { policy.setRules(bad); }).contains("quiet period"));
        // A refused request leaves the policy as it was.
        QVERIFY(!policy.evaluate({}).paused);
    }
};

QTEST_APPLESS_MAIN(TestAutoPausePolicy)
#include "tst_autopausepolicy.moc"
