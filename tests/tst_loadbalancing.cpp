// Butterfly all-reduce shard sizes (core/averaging/LoadBalancing.h).
#include "averaging/LoadBalancing.h"
#include "util/Error.h"

#include <QtTest>

#include <numeric>

using namespace dedloc;
using Shards = std::vector<std::int64_t>;
using Bandwidths = std::vector<double>;

Q_DECLARE_METATYPE(Shards)
Q_DECLARE_METATYPE(Bandwidths)

class TestLoadBalancing final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void referenceCases_data()
    {
        QTest::addColumn<qint64>("elements");
        QTest::addColumn<Bandwidths>("bandwidths");
        QTest::addColumn<qint64>("minShard");
        QTest::addColumn<Shards>("expected");
        // The cases the DeDLOC reference implementation is held to (hivemind's load balancing).
        QTest::newRow("slowest drops below the minimum") << qint64(60) << Bandwidths{0.55, 0.44, 0.40} << qint64(10) << Shards{41, 19, 0};
        QTest::newRow("slow peer gets nothing") << qint64(60) << Bandwidths{0.32, 0.55, 0.44} << qint64(10) << Shards{0, 40, 20};
        QTest::newRow("two unknown") << qint64(100) << Bandwidths{-1, -1} << qint64(0) << Shards{50, 50};
        // Our own: equal bandwidths split equally; remainders go to the first largest fractions.
        QTest::newRow("equal, 4 peers") << qint64(10) << Bandwidths{1, 1, 1, 1} << qint64(0) << Shards{3, 3, 2, 2};
        QTest::newRow("client mode reduces nothing") << qint64(90) << Bandwidths{1, 0, 1, 1} << qint64(0) << Shards{30, 0, 30, 30};
        QTest::newRow("one peer") << qint64(7) << Bandwidths{3} << qint64(0) << Shards{7};
        QTest::newRow("client beside unknown peers") << qint64(100) << Bandwidths{-1, 0, -1} << qint64(0) << Shards{50, 0, 50};
        QTest::newRow("unknown takes the mean of known") << qint64(300) << Bandwidths{1, -1, 1} << qint64(0) << Shards{100, 100, 100};
    }

    void referenceCases()
    {
        QFETCH(qint64, elements);
        QFETCH(Bandwidths, bandwidths);
        QFETCH(qint64, minShard);
        QFETCH(Shards, expected);
        QCOMPARE(balanceShards(elements, bandwidths, minShard), expected);
    }

    void optimumEqualisesTheActivePeers()
    {
        // At the LP optimum every reducing peer finishes at the same time T, and a peer that
        // reduces nothing would not finish later than T even with a tiny shard.
        const Bandwidths b{5.0, 3.0, 2.0, 1.0, 0.5};
        const auto w = optimalFractions(b);
        const double n = static_cast<double>(b.size());
        QVERIFY(std::abs(std::accumulate(w.begin(), w.end(), 0.0) - 1.0) < 1e-12);
        double level = -1;
        for (std::size_t i = 0; i < b.size(); ++i) {
            const double t = (1.0 + (n - 2.0) * w[i]) / b[i];
            if (w[i] > 1e-12) {
                if (level < 0)
                    level = t;
                QVERIFY2(std::abs(t - level) < 1e-9, qPrintable(QString::number(i)));
            }
        }
        for (std::size_t i = 0; i < b.size(); ++i)
            if (w[i] <= 1e-12)
                QVERIFY(1.0 / b[i] >= level - 1e-9);
        QVERIFY(w[0] > w[1] && w[1] > w[2]);
    }

    void countsAlwaysSumExactly()
    {
        for (std::int64_t elements : {1, 2, 999, 25'000'000}) {
            const auto s = balanceShards(elements, {0.7, 0.1, 0.33, -1, 0.9, 0.05}, 3);
            QCOMPARE(std::accumulate(s.begin(), s.end(), std::int64_t{0}), elements);
            for (auto x : s)
                QVERIFY(x >= 0);
        }
    }

    void noReducerIsAnError()
    {
        QVERIFY_THROWS_EXCEPTION(Error, (void)balanceShards(10, {0.0, 0.0}));
        QVERIFY_THROWS_EXCEPTION(Error, (void)balanceShards(10, {}));
    }
};

QTEST_APPLESS_MAIN(TestLoadBalancing)
#include "tst_loadbalancing.moc"
