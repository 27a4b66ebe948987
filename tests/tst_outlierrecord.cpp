// Persistent outliers (core/averaging/OutlierRecord.h): which CenteredClip verdicts are offences.
// An honest sender whose parts lie far off now and then must never be struck; one far off round
// after round must be, soon enough that BanList bans it within a few rounds.
#include "averaging/BanList.h"
#include "averaging/OutlierRecord.h"

#include <QTest>

#include <string>

using namespace dedloc;

class TestOutlierRecord final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Far off in every round: no offence at the 1st and 2nd verdicts, an offence at the 3rd, a ban
    // at the 4th (4 of 4) and every one after; with rounds 120 s apart (a large global batch), so
    // BanList's three strikes within 60 s alone would never ban it.
    void aSenderFarOffInEveryRoundIsBannedAtItsFourthVerdictHoweverSlowItsRounds()
    {
        OutlierRecord record;
        BanList bans;
        int bannedAt = 0;
        for (int round = 1; round <= 8; ++round) {
            const auto j = record.judge("rogue", true);
            QCOMPARE(j.offence, round >= 3);
            QCOMPARE(j.ban, round >= 4);
            QCOMPARE(j.outliers, std::min(round, 6));
            QCOMPARE(j.judged, std::min(round, 6));
            const double now = 120.0 * round;
            if (j.ban ? bans.ban("rogue", "far off", now) : j.offence && bans.strike("rogue", "far off", now))
                bannedAt = bannedAt == 0 ? round : bannedAt;
        }
        QCOMPARE(bannedAt, 4);
        QVERIFY(bans.isBanned("rogue", 8 * 120.0));
    }

    // The clean soak's pattern (one honest trainer judged far off at its 3rd, 6th, 54th and 123rd
    // verdicts of 1000), and a sender far off in one round of every four (no 6 consecutive
    // verdicts hold 3 outliers): never an offence.
    void anHonestSendersOccasionalOutliersNeverOffend()
    {
        OutlierRecord record;
        for (int v = 1; v <= 1000; ++v) {
            const bool outlier = v == 3 || v == 6 || v == 54 || v == 123;
            QVERIFY2(!record.judge("honest", outlier).offence, qPrintable(QString::number(v)));
        }
        for (int v = 1; v <= 1000; ++v)
            QVERIFY2(!record.judge("quarter", v % 4 == 0).offence, qPrintable(QString::number(v)));
        // Two outliers in a row are still no offence; a third within the window is one, and not
        // yet a ban; a fourth is.
        QVERIFY(!record.judge("honest", true).offence);
        QVERIFY(!record.judge("honest", true).offence);
        QVERIFY(!record.judge("honest", false).offence);
        const auto third = record.judge("honest", true);
        QVERIFY(third.offence && !third.ban);
        QVERIFY(record.judge("honest", true).ban);
    }

    // Far off in every other round: 3 outliers of the last 5 verdicts at the 5th, an offence then
    // and at every outlier after; never 4 of 6, so no ban at once (BanList's strikes ban it).
    void aSenderFarOffEveryOtherRoundOffendsFromItsFifth()
    {
        OutlierRecord record;
        int first = 0;
        for (int v = 1; v <= 40; ++v) {
            const auto j = record.judge("alternating", v % 2 == 1);
            QVERIFY(!j.ban);
            QCOMPARE(j.offence, v >= 5 && v % 2 == 1);
            if (j.offence && first == 0)
                first = v;
        }
        QCOMPARE(first, 5);
    }

    // Verdicts are kept per sender: a rogue's outliers do not count against an honest sender
    // judged in the same rounds, and the window moves on: after six clean verdicts the rogue's
    // next outlier is no offence.
    void eachSenderIsJudgedApartAndCleanRoundsClearTheRecord()
    {
        OutlierRecord record;
        for (int round = 1; round <= 6; ++round) {
            QCOMPARE(record.judge("rogue", true).offence, round >= 3);
            QVERIFY(!record.judge("honest", false).offence);
        }
        for (int round = 0; round < 6; ++round)
            QVERIFY(!record.judge("rogue", false).offence);
        const auto j = record.judge("rogue", true);
        QVERIFY(!j.offence);
        QCOMPARE(j.outliers, 1);
        QCOMPARE(j.judged, 6);
    }

    // At most maxSenders records: a new sender replaces the one judged least recently, which then
    // starts over; the others keep theirs.
    void theRecordForgetsTheSenderJudgedLeastRecently()
    {
        OutlierRecord record({6, 3, 4, 2});
        record.judge("a", true);
        record.judge("a", true);
        record.judge("b", true);
        record.judge("c", true); // forgets a
        QCOMPARE(record.senders(), std::size_t(2));
        const auto a = record.judge("a", true); // forgets b
        QCOMPARE(a.judged, 1);
        QVERIFY(!a.offence);
        const auto c = record.judge("c", true);
        QCOMPARE(c.judged, 2);
        QCOMPARE(c.outliers, 2);
        QCOMPARE(record.senders(), std::size_t(2));
    }

    // Options out of range are clamped: a window of 40 keeps 32 verdicts, a threshold above the
    // window is the window, and the ban's threshold is at least the offence's.
    void optionsAreClampedToWhatTheRecordHolds()
    {
        OutlierRecord record({40, 50, 60, 10});
        OutlierJudgement j;
        for (int v = 1; v <= 40; ++v) {
            j = record.judge("x", true);
            QCOMPARE(j.offence, v >= 32);
            QCOMPARE(j.ban, v >= 32);
        }
        QCOMPARE(j.judged, 32);
        QCOMPARE(j.outliers, 32);
        OutlierRecord small({6, 3, 1, 10});
        QVERIFY(!small.judge("y", true).ban);
        QVERIFY(!small.judge("y", true).ban);
        const auto third = small.judge("y", true);
        QVERIFY(third.offence && third.ban);
    }
};

QTEST_MAIN(TestOutlierRecord)
#include "tst_outlierrecord.moc"
