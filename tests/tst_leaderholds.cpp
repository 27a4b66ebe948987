// Leaders that held this peer (core/averaging/LeaderHolds.h): each hold a strike, the third hold
// within a minute a ban by strikes; the third at distinct epochs within 16 a ban however far
// apart in time; holds further apart, or repeated at one epoch, never; the count starting again
// after a ban. The clock is injected: "slow steps" are holds a minute or more apart.
#include "averaging/BanList.h"
#include "averaging/LeaderHolds.h"

#include <QTest>

#include <memory>

using namespace dedloc;

class TestLeaderHolds final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void theThirdHoldBans_data()
    {
        QTest::addColumn<QList<qint64>>("epochs");
        QTest::addColumn<double>("secondsApart");
        QTest::addColumn<int>("bannedAtHold"); // 0: never
        QTest::newRow("three epochs in a minute") << QList<qint64>{3, 4, 5} << 10.0 << 3;
        QTest::newRow("slow steps, within 16 epochs") << QList<qint64>{3, 10, 18} << 120.0 << 3;
        QTest::newRow("slow steps, the third 16 epochs after the first") << QList<qint64>{3, 10, 19} << 120.0 << 0;
        QTest::newRow("slow steps, one epoch again") << QList<qint64>{3, 3, 3, 4} << 120.0 << 0;
        QTest::newRow("slow steps, epochs out of order") << QList<qint64>{20, 8, 12} << 120.0 << 3;
        QTest::newRow("slow steps, one far behind") << QList<qint64>{20, 2, 12, 14} << 120.0 << 4;
    }
    void theThirdHoldBans()
    {
        QFETCH(QList<qint64>, epochs);
        QFETCH(double, secondsApart);
        QFETCH(int, bannedAtHold);
        const auto bans = std::make_shared<BanList>();
        LeaderHolds holds(bans);
        double now = 1000.0;
        for (int i = 0; i < int(epochs.size()); ++i, now += secondsApart) {
            const bool banned = holds.held("leader", long(epochs[i]), "never began", now);
            QCOMPARE(banned, i + 1 == bannedAtHold);
            QCOMPARE(bans->isBanned("leader", now), bannedAtHold > 0 && i + 1 >= bannedAtHold);
        }
        QVERIFY(!bans->isBanned("another leader", now));
    }

    // Each hold is a strike (the reason says it was a hold), whatever the epochs.
    void eachHoldIsAStrike()
    {
        const auto bans = std::make_shared<BanList>();
        LeaderHolds holds(bans);
        QVERIFY(!holds.held("leader", 5, "never began", 100.0));
        QCOMPARE(bans->strikes("leader", 100.0), 1);
        QVERIFY(!holds.held("leader", 40, "bad BEGIN", 101.0));
        QCOMPARE(bans->strikes("leader", 101.0), 2);
        QCOMPARE(bans->strikes("other", 101.0), 0);
    }

    // After a ban the count starts again: once the ban has run out, one more hold is a strike,
    // not at once the second ban (which would be for the run).
    void theCountStartsAgainAfterABan()
    {
        BanOptions o;
        o.banSeconds = 300.0;
        const auto bans = std::make_shared<BanList>(o);
        LeaderHolds holds(bans);
        double now = 0.0;
        for (long epoch : {1L, 2L, 3L})
            holds.held("leader", epoch, "never began", now += 100.0); // strikes expire between
        QVERIFY(bans->isBanned("leader", now));
        now += 301.0;
        QVERIFY(!bans->isBanned("leader", now));
        QVERIFY(!holds.held("leader", 6, "never began", now));
        QVERIFY(!bans->isBanned("leader", now));
        QVERIFY(!holds.held("leader", 7, "never began", now += 100.0));
        QVERIFY(holds.held("leader", 8, "never began", now += 100.0));
    }

    // Without a BanList nothing is struck, counted or banned.
    void withoutBansNothingHappens()
    {
        LeaderHolds holds(nullptr);
        for (long epoch : {1L, 2L, 3L, 4L})
            QVERIFY(!holds.held("leader", epoch, "never began", 0.0));
    }
};

QTEST_GUILESS_MAIN(TestLeaderHolds)
#include "tst_leaderholds.moc"
