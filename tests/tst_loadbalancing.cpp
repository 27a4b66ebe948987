// Butterfly all-reduce shard sizes (core/averaging/LoadBalancing.h).
#include "averaging/LoadBalancing.h"
#include "util/Error.h"

#include <QtTest>

#include <chrono>
#include <cmath>
#include <future>
#include <limits>
#include <memory>
#include <numeric>
#include <thread>

using namespace dedloc;
using Shards = std::vector<std::int64_t>;
using Bandwidths = std::vector<double>;

Q_DECLARE_METATYPE(Shards)
Q_DECLARE_METATYPE(Bandwidths)

namespace {

// What balanceShards returned on a thread of its own: `finished` false when it had not returned
// within 5 s (a loop that never ends fails the test instead of hanging it; the thread is left
// running, detached, until the process exits), else the shards or the text of what it threw.
struct Outcome {
    bool finished = false;
    Shards shards;
    QString error;
};

Outcome balanceGuarded(std::int64_t elements, const Bandwidths &bandwidths, std::int64_t minShard = 0)
{
    auto promise = std::make_shared<std::promise<Shards>>();
    auto future = promise->get_future();
    std::thread([promise, elements, bandwidths, minShard] {
        try {
            promise->set_value(balanceShards(elements, bandwidths, minShard));
        } catch (...) {
            promise->set_exception(std::current_exception());
        }
    }).detach();
    if (future.wait_for(std::chrono::seconds(5)) != std::future_status::ready)
        return {};
    try {
        return {true, future.get(), {}};
    } catch (const std::exception &e) {
        return {true, {}, QString::fromUtf8(e.what())};
    }
}

QString describe(const Outcome &o)
{
    if (!o.finished)
        return QStringLiteral("balanceShards did not return within 5 s");
    if (!o.error.isEmpty())
        return QStringLiteral("balanceShards threw: ") + o.error;
    QStringList sizes;
    for (auto x : o.shards)
        sizes << QString::number(x);
    return sizes.join(QLatin1Char(' '));
}

} // namespace

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

    // Claims so large that their sum overflows to infinity: each counts as MaxDeclaredBandwidth,
    // so two such members (or one beside a member whose bandwidth is unknown, which takes the
    // known members' mean) split the vector equally, and the counts still sum to `elements`.
    void hugeClaimsStillSumExactly_data()
    {
        QTest::addColumn<Bandwidths>("bandwidths");
        QTest::newRow("two huge claims") << Bandwidths{1e308, 1e308};
        QTest::newRow("unknown leader beside a huge claim") << Bandwidths{-1, 1e308};
    }
    void hugeClaimsStillSumExactly()
    {
        QFETCH(Bandwidths, bandwidths);
        const auto o = balanceGuarded(1001, bandwidths);
        QVERIFY2(o.finished && o.error.isEmpty(), qPrintable(describe(o)));
        QCOMPARE(std::accumulate(o.shards.begin(), o.shards.end(), std::int64_t{0}), std::int64_t{1001});
        QCOMPARE(o.shards, (Shards{501, 500}));
    }

    // A claim above MaxDeclaredBandwidth gets exactly what a claim of MaxDeclaredBandwidth gets,
    // and so do the honest members beside it. Expected shards from the water level of the header
    // (n = 3: w_i = clamp(T b_i - 1, 0, 1); n = 2: in proportion to bandwidth), with b = 1e5:
    //   {1e5, 10, 10}: the fast member alone reaches T = 2e-5 before the others start: all of it;
    //   {1e5, 10}: 1e5 / 100010 and 10 / 100010 of 100010 elements;
    //   {1e5, 8e4, 8e4}: T = 1 / 65000, w = {7, 3, 3} / 13 of 13000 elements.
    void outsizedClaimCountsAsTheBound_data()
    {
        QTest::addColumn<qint64>("elements");
        QTest::addColumn<Bandwidths>("honest");
        QTest::addColumn<Shards>("expected");
        QTest::newRow("beside 10 and 10") << qint64(1000) << Bandwidths{10, 10} << Shards{1000, 0, 0};
        QTest::newRow("beside 10") << qint64(100010) << Bandwidths{10} << Shards{100000, 10};
        QTest::newRow("beside 8e4 and 8e4") << qint64(13000) << Bandwidths{8e4, 8e4} << Shards{7000, 3000, 3000};
    }
    void outsizedClaimCountsAsTheBound()
    {
        QFETCH(qint64, elements);
        QFETCH(Bandwidths, honest);
        QFETCH(Shards, expected);
        Bandwidths atBound{MaxDeclaredBandwidth}, outsized{1e300};
        atBound.insert(atBound.end(), honest.begin(), honest.end());
        outsized.insert(outsized.end(), honest.begin(), honest.end());
        const auto bound = balanceGuarded(elements, atBound);
        const auto claimed = balanceGuarded(elements, outsized);
        QVERIFY2(bound.finished && bound.error.isEmpty(), qPrintable(describe(bound)));
        QVERIFY2(claimed.finished && claimed.error.isEmpty(), qPrintable(describe(claimed)));
        QCOMPARE(bound.shards, expected);
        QCOMPARE(claimed.shards, expected);
    }

    // Open runs cap every share at twice an even one of the r members that reduce (fairShareCap:
    // 2 / r for r >= 3): a member claiming 1e5 beside members of 10 takes all of the vector
    // uncapped, and half of it among 4 reducers (the others split the rest: w = 1/6 each), two
    // thirds among 3; two reducers and one reducer are not capped; client-mode members (0) do
    // not count; equal members are not affected.
    void aCappedShareBoundsALiar_data()
    {
        QTest::addColumn<Bandwidths>("bandwidths");
        QTest::addColumn<Shards>("uncapped");
        QTest::addColumn<Shards>("capped");
        QTest::newRow("liar and 3 of 10") << Bandwidths{1e5, 10, 10, 10} << Shards{6000, 0, 0, 0}
                                          << Shards{3000, 1000, 1000, 1000};
        QTest::newRow("liar and 2 of 10") << Bandwidths{1e5, 10, 10} << Shards{6000, 0, 0} << Shards{4000, 1000, 1000};
        QTest::newRow("liar, a client, 3 of 10") << Bandwidths{1e5, 0, 10, 10, 10} << Shards{6000, 0, 0, 0, 0}
                                                 << Shards{3000, 0, 1000, 1000, 1000};
        QTest::newRow("liar and 1 of 10") << Bandwidths{1e5, 10} << Shards{5999, 1} << Shards{5999, 1};
        QTest::newRow("one reducer") << Bandwidths{10, 0, 0} << Shards{6000, 0, 0} << Shards{6000, 0, 0};
        QTest::newRow("4 equal") << Bandwidths{10, 10, 10, 10} << Shards{1500, 1500, 1500, 1500}
                                 << Shards{1500, 1500, 1500, 1500};
    }
    void aCappedShareBoundsALiar()
    {
        QFETCH(Bandwidths, bandwidths);
        QFETCH(Shards, uncapped);
        QFETCH(Shards, capped);
        QCOMPARE(shardShares(bandwidths, 6000), uncapped);
        QCOMPARE(shardShares(bandwidths, 6000, true), capped);
    }

    // NaN and +inf are no bandwidths: they count as unknown (-1), i.e. the mean of the known
    // ones. {unknown, 1, 3} -> {2, 1, 3}: T = 3 / 5, w = {0.2, 0, 0.8}.
    void nonFiniteClaimsCountAsUnknown_data()
    {
        QTest::addColumn<double>("claim");
        QTest::newRow("NaN") << std::numeric_limits<double>::quiet_NaN();
        QTest::newRow("+inf") << std::numeric_limits<double>::infinity();
        QTest::newRow("-1 (unknown)") << -1.0;
    }
    void nonFiniteClaimsCountAsUnknown()
    {
        QFETCH(double, claim);
        const auto o = balanceGuarded(100, {claim, 1, 3});
        QVERIFY2(o.finished && o.error.isEmpty(), qPrintable(describe(o)));
        QCOMPARE(o.shards, (Shards{20, 0, 80}));
    }

    void noReducerIsAnError()
    {
        QVERIFY_THROWS_EXCEPTION(Error, (void)balanceShards(10, {0.0, 0.0}));
        QVERIFY_THROWS_EXCEPTION(Error, (void)balanceShards(10, {}));
    }

    // Shares scale exactly: floors of E s_i / S, then one more element for each of the largest
    // remainders (ties to the lower index); a member without a share never gets an element.
    void sharesScaleByLargestRemainders()
    {
        // 10 x 1/3 = 3.33 each: one leftover element, to the first of the equal remainders.
        QCOMPARE(shardsFromShares(10, {1, 1, 1}), (std::vector<std::int64_t>{4, 3, 3}));
        // 10 x {5, 3, 0, 2}/10: no remainder at all.
        QCOMPARE(shardsFromShares(10, {5, 3, 0, 2}), (std::vector<std::int64_t>{5, 3, 0, 2}));
        // 7 x {2, 0, 1}/3 = 4.67, 0, 2.33: the leftover element goes to the larger remainder.
        QCOMPARE(shardsFromShares(7, {2, 0, 1}), (std::vector<std::int64_t>{5, 0, 2}));
        // Fewer elements than members with shares: the largest remainders take them.
        QCOMPARE(shardsFromShares(2, {1, 3, 0, 2}), (std::vector<std::int64_t>{0, 1, 0, 1}));
        QCOMPARE(shardsFromShares(0, {1, 1}), (std::vector<std::int64_t>{0, 0}));
    }

    // The leader's shares of the swarm's total lay out a vector of any size, the 11.7 M-element
    // model and one of 2^40 elements (no overflow), summing exactly and in proportion.
    void sharesLayOutAnyVector()
    {
        const std::int64_t total = std::int64_t{1} << 20;
        const auto shares = shardShares({10.0, 2.0, 0.0, -1.0}, total);
        QCOMPARE(std::accumulate(shares.begin(), shares.end(), std::int64_t{0}), total);
        QCOMPARE(shares[2], std::int64_t{0}); // client mode reduces nothing
        for (const std::int64_t elements : {std::int64_t{11'685'888}, std::int64_t{1} << 40, std::int64_t{5}}) {
            const auto sizes = shardsFromShares(elements, shares);
            QCOMPARE(std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0}), elements);
            QCOMPARE(sizes[2], std::int64_t{0});
            for (std::size_t i = 0; i < sizes.size(); ++i) {
                const double exact = static_cast<double>(elements) * static_cast<double>(shares[i]) / double(total);
                QVERIFY2(std::abs(static_cast<double>(sizes[i]) - exact) < 1.0 + 1e-6 * exact, qPrintable(describe({true, sizes, {}})));
            }
        }
    }

    void sharesWithoutAReducerAreAnError()
    {
        QVERIFY_THROWS_EXCEPTION(Error, (void)shardsFromShares(10, {0, 0}));
        QVERIFY_THROWS_EXCEPTION(Error, (void)shardsFromShares(10, {}));
        QVERIFY_THROWS_EXCEPTION(Error, (void)shardsFromShares(10, {3, -1}));
        QVERIFY_THROWS_EXCEPTION(Error, (void)shardsFromShares(-1, {1}));
    }
};

QTEST_APPLESS_MAIN(TestLoadBalancing)
#include "tst_loadbalancing.moc"
