// Auto-pause and manual pauses (core/system/AutoPausePolicy.h) on an injected clock.
#include "system/AutoPausePolicy.h"

#include "TestSupport.h"
#include "util/Error.h"

#include <QtTest>

using namespace dedloc;

Q_DECLARE_METATYPE(dedloc::AutoPauseRules)
Q_DECLARE_METATYPE(dedloc::HostObservation)

namespace {

// A clock the test moves by hand. Starts on Monday 2026-11-30 10:00:00 local (= unix
// 1'796'032'800, the local offset does not matter to the policy). dayStart past 86400 starts on
// a later day of that week.
struct FakeClock {
    double unix = 1796032800.0;
    int dayStart = 10 * 3600; // local seconds of day at `unix`
    double start = 1796032800.0;
    LocalClockReading read() const
    {
        const long elapsed = long(unix - start);
        return {unix, int((dayStart + elapsed) % 86400), int((dayStart + elapsed) / 86400 % 7)};
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
        night.schedule = *parseWeeklySchedule("daily 22:00-07:00").schedule;
        QTest::newRow("outside schedule (day)")
            << night << HostObservation{} << 10 * 3600 << true << QString("outside the schedule (next: Mon 22:00)");
        QTest::newRow("inside schedule (before midnight)")
            << night << HostObservation{} << 23 * 3600 << false << QString();
        QTest::newRow("inside schedule (after midnight)")
            << night << HostObservation{} << 3 * 3600 << false << QString();
        QTest::newRow("schedule end is exclusive")
            << night << HostObservation{} << 7 * 3600 << true << QString("outside the schedule (next: Mon 22:00)");
        auto week = base; // weekday evenings into the morning, weekends all day
        week.scheduleEnabled = true;
        week.schedule = *parseWeeklySchedule("Mon-Fri 18:00-08:00\nSat,Sun all day").schedule;
        constexpr int day = 86400;
        QTest::newRow("weekly: Tuesday noon")
            << week << HostObservation{} << 1 * day + 12 * 3600 << true << QString("outside the schedule (next: Tue 18:00)");
        QTest::newRow("weekly: Tuesday evening") << week << HostObservation{} << 1 * day + 19 * 3600 << false << QString();
        QTest::newRow("weekly: Saturday 07:00, Friday's window") << week << HostObservation{} << 5 * day + 7 * 3600 << false << QString();
        QTest::newRow("weekly: Sunday noon") << week << HostObservation{} << 6 * day + 12 * 3600 << false << QString();
        QTest::newRow("weekly: Monday 07:00, Sunday's window ended at midnight")
            << week << HostObservation{} << 0 * day + 7 * 3600 << true << QString("outside the schedule (next: Mon 18:00)");
        auto empty = base;
        empty.scheduleEnabled = true;
        QTest::newRow("schedule on without a window")
            << empty << HostObservation{} << 10 * 3600 << true << QString("outside the schedule (it has no window)");

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

        HostObservation film;
        film.fullScreenProgram = "mpv";
        QTest::newRow("a program full screen") << base << film << 10 * 3600 << true << QString("mpv is full screen");
        auto noFullScreen = base;
        noFullScreen.pauseOnFullScreen = false;
        QTest::newRow("full screen, rule off") << noFullScreen << film << 10 * 3600 << false << QString();
        HostObservation awake; // Wayland: a program asked the session not to blank the screen
        awake.screenAwakeProgram = "steam";
        QTest::newRow("screen kept awake") << base << awake << 10 * 3600 << true << QString("steam keeps the screen awake");
        QTest::newRow("screen kept awake, rule off") << noFullScreen << awake << 10 * 3600 << false << QString();

        auto hot = base; // limits without a grace period act at the first reading above them
        hot.limitGraceSeconds = 0.0;
        hot.gpuTemperature.limit = 85.0;
        hot.cpuTemperature.limit = 90.0;
        hot.gpuPower.limit = 250.0;
        hot.fanSpeed.limit = 70.0;
        HostObservation gpuHot = game; // a limit comes before every other automatic rule
        gpuHot.gpuTemperatureCelsius = 86.0;
        QTest::newRow("GPU temperature above its limit")
            << hot << gpuHot << 10 * 3600 << true << QString("cooling down: GPU at 86 °C (limit 85 °C)");
        HostObservation atLimit;
        atLimit.gpuTemperatureCelsius = 85.0;
        atLimit.cpuTemperatureCelsius = 90.0;
        atLimit.gpuPowerWatts = 250.0;
        atLimit.fanPercent = 70.0;
        QTest::newRow("at the limits is not above them") << hot << atLimit << 10 * 3600 << false << QString();
        HostObservation cpuHot;
        cpuHot.cpuTemperatureCelsius = 95.4;
        QTest::newRow("CPU temperature") << hot << cpuHot << 10 * 3600 << true << QString("cooling down: CPU at 95 °C (limit 90 °C)");
        HostObservation power;
        power.gpuPowerWatts = 301.0;
        QTest::newRow("GPU power") << hot << power << 10 * 3600 << true << QString("GPU power 301 W (limit 250 W)");
        HostObservation fan;
        fan.fanPercent = 82.0;
        QTest::newRow("fan speed") << hot << fan << 10 * 3600 << true << QString("fan at 82% (limit 70%)");
        QTest::newRow("limits off") << base << gpuHot << 10 * 3600 << true << QString("witcher3.exe is using the GPU for graphics");

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

    // A limit acts only after its reading stayed above it for the grace period, and stops only
    // below limit - hysteresis; then the quiet period runs as for every automatic rule.
    void hardwareLimitGraceAndHysteresis()
    {
        FakeClock clock;
        auto rules = defaults();
        rules.gpuTemperature = {85.0, 5.0};
        rules.limitGraceSeconds = 30.0;
        AutoPausePolicy policy(rules, clock.fn());
        HostObservation o;
        auto at = [&](double seconds, double celsius) {
            clock.unix = clock.start + seconds;
            o.gpuTemperatureCelsius = celsius;
            return policy.evaluate(o);
        };
        QVERIFY(!at(0, 86.0).paused);
        QVERIFY(!at(20, 88.0).paused);
        QVERIFY(!at(25, 84.0).paused); // a spike below the limit ends the grace period
        QVERIFY(!at(26, 86.0).paused);
        QVERIFY(!at(55, 86.0).paused); // 29 s above
        auto d = at(56, 87.0);         // 30 s above: it acts
        QVERIFY(d.paused);
        QCOMPARE(d.cause, PauseCause::Automatic);
        QCOMPARE(QString::fromStdString(d.reason), QString("cooling down: GPU at 87 °C (limit 85 °C)"));
        QVERIFY(at(100, 82.0).paused); // below the limit, not below limit - hysteresis
        QVERIFY(at(200, 80.0).paused); // 80 is not below 80
        d = at(300, 79.0);             // cooled down: the quiet period starts
        QVERIFY(d.paused);
        QCOMPARE(d.quietSecondsLeft, 15.0);
        QVERIFY(at(314, 78.0).paused);
        QVERIFY(!at(315, 78.0).paused);
        QVERIFY(!at(316, 86.0).paused); // above again: a new grace period
        QVERIFY(at(346, 86.0).paused);
        QVERIFY(at(347, -1.0).paused); // the sensor stopped answering: no longer acts, quiet period
        QVERIFY(!at(362, -1.0).paused);
    }

    void powerAndFanHysteresisDefaultsToATenth()
    {
        FakeClock clock;
        auto rules = defaults();
        rules.quietPeriodSeconds = 0.0;
        rules.limitGraceSeconds = 0.0;
        rules.gpuPower = {200.0, 0.0};
        AutoPausePolicy policy(rules, clock.fn());
        HostObservation o;
        o.gpuPowerWatts = 210.0;
        QVERIFY(policy.evaluate(o).paused);
        o.gpuPowerWatts = 181.0;
        QVERIFY(policy.evaluate(o).paused); // not below 180
        o.gpuPowerWatts = 179.0;
        QVERIFY(!policy.evaluate(o).paused);
    }

    void badLimitsAreRefused()
    {
        FakeClock clock;
        AutoPausePolicy policy(defaults(), clock.fn());
        auto rules = defaults();
        rules.gpuTemperature = {80.0, 80.0};
        QVERIFY_THROWS_EXCEPTION(Error, policy.setRules(rules));
        rules = defaults();
        rules.fanSpeed = {60.0, -1.0};
        QVERIFY_THROWS_EXCEPTION(Error, policy.setRules(rules));
        rules = defaults();
        rules.limitGraceSeconds = -1.0;
        QVERIFY_THROWS_EXCEPTION(Error, policy.setRules(rules));
        QCOMPARE(policy.rules().gpuTemperature.limit, 0.0); // the old rules stay
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
        bad.schedule.windows = {ScheduleWindow{0x7f, -1, 3600}};
        QVERIFY(test::errorOf([&] { policy.setRules(bad); }).contains("local times of day"));
        bad.schedule.windows = {ScheduleWindow{0, 0, 3600}}; // no day
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
