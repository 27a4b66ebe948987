// Compute utilisation (core/face/ComputeUtilisation.h): per-step shares, the recent window
// weighted by wall time, restarts after a pause, and nothing where nothing is known.
#include "face/ComputeUtilisation.h"

#include <QtTest>

using namespace dedloc;

class TestComputeUtilisation final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void nothingBeforeAStart()
    {
        ComputeUtilisation u;
        QVERIFY(!u.step(10.0, 5.0));
        QVERIFY(!u.recent());
    }

    void eachStepIsItsIntervalsShare()
    {
        ComputeUtilisation u;
        u.restart(100.0, 40.0);
        QCOMPARE(*u.step(110.0, 49.0), 0.9);  // 9 s computing of 10
        QCOMPARE(*u.step(130.0, 54.0), 0.25); // 5 of 20: a slow round
        // Recent: (9 + 5) / (10 + 20), not the mean of the shares (0.575).
        QCOMPARE(*u.recent(), 14.0 / 30.0);
    }

    void theWindowForgetsOldSteps()
    {
        ComputeUtilisation u(2);
        u.restart(0.0, 0.0);
        (void)u.step(10.0, 0.0);  // idle
        (void)u.step(20.0, 10.0); // busy
        (void)u.step(30.0, 20.0); // busy: the idle one leaves the window
        QCOMPARE(*u.recent(), 1.0);
    }

    void pausedTimeIsNotIdleTime()
    {
        ComputeUtilisation u;
        u.restart(0.0, 0.0);
        QCOMPARE(*u.step(10.0, 8.0), 0.8);
        u.restart(70.0, 8.0); // resumed after a minute's pause
        QCOMPARE(*u.step(80.0, 16.0), 0.8);
        QCOMPARE(*u.recent(), 0.8);
    }

    void sharesStayWithinZeroAndOne()
    {
        ComputeUtilisation u;
        u.restart(0.0, 0.0);
        QCOMPARE(*u.step(1.0, 1.5), 1.0);   // clock granularity: never above 1
        QCOMPARE(*u.step(2.0, 1.0), 0.0);   // a total that went back (a new session): never below 0
        QVERIFY(!u.step(2.0, 1.0));         // no wall time passed: no share
    }
};

QTEST_GUILESS_MAIN(TestComputeUtilisation)
#include "tst_computeutilisation.moc"
