// Pacing of a peer's progress (core/averaging/ProgressPacing.h): its last micro-batch before a
// step, the period between its records, how long a record lives.
#include "averaging/ProgressPacing.h"

#include <QtTest>

#include <cmath>
#include <limits>

using namespace dedloc;

class TestProgressPacing final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // The last micro-batch of a step is cut to what this peer computes by the ETA.
    void lastMicroBatchFitsTheEta_data()
    {
        QTest::addColumn<double>("eta");
        QTest::addColumn<double>("rate");
        QTest::addColumn<int>("full");
        QTest::addColumn<int>("expected");
        QTest::newRow("far from the step: full") << 10.0 << 20.0 << 16 << 16;
        QTest::newRow("exactly one full micro-batch left") << 0.8 << 20.0 << 16 << 16;
        QTest::newRow("half a micro-batch left") << 0.4 << 20.0 << 16 << 8;
        QTest::newRow("rounded up") << 0.31 << 20.0 << 16 << 7;
        QTest::newRow("batch reached, stale ETA: one sample") << 0.0 << 20.0 << 16 << 1;
        QTest::newRow("negative ETA: one sample") << -1.0 << 20.0 << 16 << 1;
        QTest::newRow("no ETA (no throughput anywhere)") << std::numeric_limits<double>::infinity() << 20.0 << 16 << 16;
        QTest::newRow("own throughput unknown") << 0.2 << 0.0 << 16 << 16;
        QTest::newRow("NaN throughput") << 0.2 << std::nan("") << 16 << 16;
        QTest::newRow("bad configured size") << 0.2 << 20.0 << 0 << 1;
    }

    void lastMicroBatchFitsTheEta()
    {
        QFETCH(double, eta);
        QFETCH(double, rate);
        QFETCH(int, full);
        QFETCH(int, expected);
        QCOMPARE(fitMicroBatch(eta, rate, full), expected);
    }

    // Base 1 s, max 5 s, matchmaking 5 s; "settled" 8 s is the first moment after an epoch change
    // at which the period may grow (3 x base + 5).
    void progressPeriodFollowsTheEta_data()
    {
        QTest::addColumn<double>("max");
        QTest::addColumn<double>("eta");
        QTest::addColumn<double>("settled");
        QTest::addColumn<double>("expected");
        const double inf = std::numeric_limits<double>::infinity();
        QTest::newRow("a minute to the step: the longest") << 5.0 << 60.0 << 30.0 << 5.0;
        QTest::newRow("17 s to the step: a quarter of 12 s") << 5.0 << 17.0 << 30.0 << 3.0;
        QTest::newRow("within matchmaking + 4 s: the base") << 5.0 << 9.0 << 30.0 << 1.0;
        QTest::newRow("the step is due: the base") << 5.0 << 0.0 << 30.0 << 1.0;
        QTest::newRow("just after an epoch change: the base") << 5.0 << 60.0 << 7.9 << 1.0;
        QTest::newRow("settled exactly") << 5.0 << 60.0 << 8.0 << 5.0;
        QTest::newRow("nobody computes (ETA infinite)") << 5.0 << inf << 30.0 << 5.0;
        QTest::newRow("ETA unknown (-1)") << 5.0 << -1.0 << 30.0 << 5.0;
        QTest::newRow("max below the base: the base") << 0.5 << 60.0 << 30.0 << 1.0;
        QTest::newRow("NaN max: the base") << std::nan("") << 60.0 << 30.0 << 1.0;
        QTest::newRow("NaN settled: the base") << 5.0 << 60.0 << std::nan("") << 1.0;
    }

    void progressPeriodFollowsTheEta()
    {
        QFETCH(double, max);
        QFETCH(double, eta);
        QFETCH(double, settled);
        QFETCH(double, expected);
        QCOMPARE(adaptiveProgressPeriod(1.0, max, eta, 5.0, settled), expected);
    }

    // A record outlives three of its publisher's turns: 10 s near a step (turns of 1 s), 30 s
    // between steps (turns of 10 s), and never fewer than 5 base periods.
    void recordsOutliveThreeTurns()
    {
        QCOMPARE(progressRecordTtl(1.0, 1.0), 10.0);
        QCOMPARE(progressRecordTtl(1.0, 10.0), 30.0);
        QCOMPARE(progressRecordTtl(1.0, 4.0), 12.0);
        QCOMPARE(progressRecordTtl(3.0, 3.0), 15.0);
    }
};

QTEST_APPLESS_MAIN(TestProgressPacing)
#include "tst_progresspacing.moc"
