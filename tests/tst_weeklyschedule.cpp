// The weekly schedule (core/system/WeeklySchedule.h): the text form parses into windows and back,
// mistakes are refused with the line and the reason, windows past midnight belong to the day they
// start on, and the next opening is named.
#include "system/WeeklySchedule.h"

#include <QtTest>

using namespace dedloc;

namespace {
constexpr int H = 3600;
}

class TestWeeklySchedule final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void parsesAndFormats()
    {
        const auto p = parseWeeklySchedule("Mon-Fri 18:00-08:00\nsat,SUNDAY all day; Wed 12:00-13:30\n\ndaily 02:00-06:00\nFri-Mon 00:00-24:00\nTue 20:00-24:00");
        QVERIFY2(p.schedule.has_value(), p.error.c_str());
        const auto &w = p.schedule->windows;
        QCOMPARE(w.size(), std::size_t(6));
        QCOMPARE(w[0], (ScheduleWindow{0b0011111, 18 * H, 8 * H}));
        QCOMPARE(w[1], (ScheduleWindow{0b1100000, 0, 0}));
        QCOMPARE(w[2], (ScheduleWindow{0b0000100, 12 * H, 13 * H + 1800}));
        QCOMPARE(w[3], (ScheduleWindow{0b1111111, 2 * H, 6 * H}));
        QCOMPARE(w[4], (ScheduleWindow{0b1110001, 0, 0})); // Fri-Mon wraps; 00:00-24:00 is all day
        QCOMPARE(w[5], (ScheduleWindow{0b0000010, 20 * H, 0}));
        const std::string text = formatWeeklySchedule(*p.schedule);
        QCOMPARE(text, std::string("Mon-Fri 18:00-08:00\nSat-Sun all day\nWed 12:00-13:30\ndaily 02:00-06:00\nMon,Fri-Sun all day\nTue 20:00-24:00"));
        QCOMPARE(*parseWeeklySchedule(text).schedule, *p.schedule); // round trip
        QVERIFY(parseWeeklySchedule("").schedule->windows.empty());
    }

    void mistakesSayWhereAndWhy_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("says");
        QTest::newRow("unknown day") << "Mon-Fri 18:00-08:00\nMon-Fry 18:00-08:00" << "line 2 (\"Mon-Fry 18:00-08:00\"): unknown day in \"Mon-Fry\"";
        QTest::newRow("no hours") << "Mon" << "line 1 (\"Mon\"): a window is days and hours";
        QTest::newRow("bad clock") << "Mon 25:00-26:00" << "hours are HH:MM-HH:MM";
        QTest::newRow("minutes") << "Mon 10:75-11:00" << "hours are HH:MM-HH:MM";
        QTest::newRow("24:00 as a start") << "Mon 24:00-08:00" << "hours are HH:MM-HH:MM";
        QTest::newRow("one time") << "Mon 10:00" << "hours are HH:MM-HH:MM";
        QTest::newRow("empty window") << "Mon 10:00-10:00" << "is empty (write \"all day\")";
        QTest::newRow("trailing junk") << "Mon 10:00-11:00x" << "hours are HH:MM-HH:MM";
    }

    void mistakesSayWhereAndWhy()
    {
        QFETCH(QString, text);
        QFETCH(QString, says);
        const auto p = parseWeeklySchedule(text.toStdString());
        QVERIFY(!p.schedule.has_value());
        QVERIFY2(QString::fromStdString(p.error).contains(says), p.error.c_str());
    }

    void windowsCoverTheirHours()
    {
        const auto s = *parseWeeklySchedule("Mon-Fri 18:00-08:00\nSat all day\nWed 12:00-13:30").schedule;
        QVERIFY(!scheduleAllows(s, 0, 7 * H)); // Monday morning: Sunday starts no window
        QVERIFY(scheduleAllows(s, 0, 18 * H));
        QVERIFY(!scheduleAllows(s, 0, 18 * H - 1));
        QVERIFY(scheduleAllows(s, 1, 7 * H + 3599)); // Tuesday morning: Monday's window
        QVERIFY(!scheduleAllows(s, 1, 8 * H));       // the end is exclusive
        QVERIFY(scheduleAllows(s, 2, 12 * H + 60));  // Wednesday lunch
        QVERIFY(!scheduleAllows(s, 2, 13 * H + 1800));
        QVERIFY(scheduleAllows(s, 5, 7 * H));        // Saturday morning: Friday's window, and Saturday's
        QVERIFY(scheduleAllows(s, 5, 23 * H));
        QVERIFY(!scheduleAllows(s, 6, 1 * H));       // Sunday: Saturday's all-day window ends at midnight
        QVERIFY(!scheduleAllows(WeeklySchedule{}, 3, 12 * H));
    }

    void nextOpening()
    {
        const auto s = *parseWeeklySchedule("Mon-Fri 18:00-08:00\nSat all day").schedule;
        QCOMPARE(nextScheduleStart(s, 0, 9 * H), std::string("Mon 18:00"));
        QCOMPARE(nextScheduleStart(s, 0, 18 * H), std::string("Tue 18:00")); // this one is open now
        QCOMPARE(nextScheduleStart(s, 6, 9 * H), std::string("Mon 18:00"));  // Sunday
        QCOMPARE(nextScheduleStart(s, 4, 20 * H), std::string("Sat 00:00"));
        const auto weekly = *parseWeeklySchedule("Wed 12:00-13:00").schedule;
        QCOMPARE(nextScheduleStart(weekly, 2, 12 * H + 1), std::string("Wed 12:00")); // a week later
        QCOMPARE(nextScheduleStart(WeeklySchedule{}, 2, 0), std::string());
    }
};

QTEST_APPLESS_MAIN(TestWeeklySchedule)
#include "tst_weeklyschedule.moc"
