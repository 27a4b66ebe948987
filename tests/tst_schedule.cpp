// Learning-rate schedule: linear warm-up to the peak, then linear decay to 0 at totalSteps.
// The expected values are worked out by hand from the formula in train/Schedule.h:
//   lr(s) = peak * s / warmup                                for s < warmup
//   lr(s) = peak * max(0, (total - s) / (total - warmup))    otherwise
#include "train/Schedule.h"

#include <QtTest>

#include <cmath>

using dedloc::LinearWarmupDecay;

namespace {

bool close(double actual, double expected)
{
    return std::abs(actual - expected) <= 1e-12 * std::max(1.0, std::abs(expected));
}

} // namespace

class TestSchedule : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void at_data();
    void at();
    void continuousAtWarmupEnd();
    void monotoneRampThenDecay();
    void defaultIsZero();
};

void TestSchedule::at_data()
{
    QTest::addColumn<double>("peak");
    QTest::addColumn<qlonglong>("warmup");
    QTest::addColumn<qlonglong>("total");
    QTest::addColumn<qlonglong>("step");
    QTest::addColumn<double>("expected");

    // peak 1e-3, warm-up 100 steps, decay over the 900 steps to 1000.
    QTest::newRow("step 0") << 1e-3 << 100LL << 1000LL << 0LL << 0.0;
    QTest::newRow("first step") << 1e-3 << 100LL << 1000LL << 1LL << 1e-5;
    QTest::newRow("mid warm-up") << 1e-3 << 100LL << 1000LL << 50LL << 5e-4;
    QTest::newRow("last warm-up step") << 1e-3 << 100LL << 1000LL << 99LL << 9.9e-4;
    QTest::newRow("peak at step == warmup") << 1e-3 << 100LL << 1000LL << 100LL << 1e-3;
    QTest::newRow("first decay step") << 1e-3 << 100LL << 1000LL << 101LL << 1e-3 * 899.0 / 900.0;
    QTest::newRow("mid decay") << 1e-3 << 100LL << 1000LL << 550LL << 5e-4;
    QTest::newRow("three quarters of decay") << 1e-3 << 100LL << 1000LL << 775LL << 2.5e-4;
    QTest::newRow("last step before total") << 1e-3 << 100LL << 1000LL << 999LL << 1e-3 / 900.0;
    QTest::newRow("step == total") << 1e-3 << 100LL << 1000LL << 1000LL << 0.0;
    QTest::newRow("beyond total") << 1e-3 << 100LL << 1000LL << 1500LL << 0.0;
    QTest::newRow("far beyond total") << 1e-3 << 100LL << 1000LL << 1000000LL << 0.0;
    QTest::newRow("negative step") << 1e-3 << 100LL << 1000LL << -5LL << 0.0;
    QTest::newRow("step -1") << 1e-3 << 100LL << 1000LL << -1LL << 0.0;

    // The bundled run: peak 0.00176, warm-up 100, total 5000.
    QTest::newRow("default run, warm-up 25") << 0.00176 << 100LL << 5000LL << 25LL << 0.00044;
    QTest::newRow("default run, mid decay") << 0.00176 << 100LL << 5000LL << 2550LL << 0.00088;
    QTest::newRow("default run, 4020") << 0.00176 << 100LL << 5000LL << 4020LL << 0.00176 * 980.0 / 4900.0;

    // No warm-up: the peak at step 0, then linear decay over all of total.
    QTest::newRow("warmup 0, step 0") << 2.0 << 0LL << 200LL << 0LL << 2.0;
    QTest::newRow("warmup 0, step 50") << 2.0 << 0LL << 200LL << 50LL << 1.5;
    QTest::newRow("warmup 0, step 150") << 2.0 << 0LL << 200LL << 150LL << 0.5;
    QTest::newRow("warmup 0, step == total") << 2.0 << 0LL << 200LL << 200LL << 0.0;
    QTest::newRow("warmup 0, negative step") << 2.0 << 0LL << 200LL << -1LL << 0.0;

    // Warm-up as long as the whole run: ramps up, then is 0 from total on (the formula's
    // (total - s) / (total - warmup) is 0/0 there; the implementation guards the span at 1).
    QTest::newRow("warmup == total, ramp") << 1.0 << 10LL << 10LL << 4LL << 0.4;
    QTest::newRow("warmup == total, at total") << 1.0 << 10LL << 10LL << 10LL << 0.0;
    QTest::newRow("warmup == total, beyond") << 1.0 << 10LL << 10LL << 11LL << 0.0;
}

void TestSchedule::at()
{
    QFETCH(double, peak);
    QFETCH(qlonglong, warmup);
    QFETCH(qlonglong, total);
    QFETCH(qlonglong, step);
    QFETCH(double, expected);

    const LinearWarmupDecay schedule{peak, static_cast<long>(warmup), static_cast<long>(total)};
    const double actual = schedule.at(static_cast<long>(step));
    QVERIFY2(close(actual, expected),
             qPrintable(QStringLiteral("lr(%1) = %2, expected %3").arg(step).arg(actual, 0, 'g', 17).arg(expected, 0, 'g', 17)));
}

void TestSchedule::continuousAtWarmupEnd()
{
    // The two pieces meet at the peak: lr(warmup - 1) and lr(warmup + 1) are one step below it.
    const LinearWarmupDecay s{1.0, 40, 240};
    QVERIFY(close(s.at(40), 1.0));
    QVERIFY(close(s.at(39), 39.0 / 40.0));
    QVERIFY(close(s.at(41), 199.0 / 200.0));
    QVERIFY(s.at(39) < s.at(40));
    QVERIFY(s.at(41) < s.at(40));
}

void TestSchedule::monotoneRampThenDecay()
{
    const LinearWarmupDecay s{3e-3, 50, 400};
    for (long step = 1; step <= 50; ++step)
        QVERIFY2(s.at(step) > s.at(step - 1), qPrintable(QStringLiteral("not increasing at %1").arg(step)));
    for (long step = 51; step <= 400; ++step)
        QVERIFY2(s.at(step) < s.at(step - 1), qPrintable(QStringLiteral("not decreasing at %1").arg(step)));
    for (long step = 0; step <= 500; ++step) {
        QVERIFY(s.at(step) >= 0.0);
        QVERIFY(s.at(step) <= 3e-3 * (1 + 1e-12));
    }
}

void TestSchedule::defaultIsZero()
{
    // A default-constructed schedule has peak 0: no step may produce a non-zero rate.
    const LinearWarmupDecay s;
    for (long step : {-1L, 0L, 1L, 10L})
        QCOMPARE(s.at(step), 0.0);
}

QTEST_APPLESS_MAIN(TestSchedule)
#include "tst_schedule.moc"
