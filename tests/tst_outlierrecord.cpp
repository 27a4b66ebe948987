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
    // Far off in every round: no offence at the 1st and 2nd verdicts, one at every verdict from the
    // 3rd; with BanList's defaults (three strikes within 60 s) and a round a second it is banned
    // at its 5th round.
    void aSenderFarOffInEveryRoundOffendsFromItsThirdVerdictAndIsBannedAtItsFifth()
    {
        OutlierRecord record;
        BanList bans;
        int bannedAt = 0;
        for (int round = 1; round <= 8; ++round) {
            const auto j = record.judge("rogue", true);
            QCOMPARE(j.offence, round >= 3);
            QCOMPARE(j.outliers, std::min(round, 6));
            QCOMPARE(j.judged, std::min(round, 6));
            if (j.offence && bans.strike("rogue", "far off", round) && bannedAt == 0)
                bannedAt = round;
        }
        QCOMPARE(bannedAt, 5);
        QVERIFY(bans.isBanned("rogue", 8.0));
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
        // Two outliers in a row are still no offence; a third within the window is.
        QVERIFY(!record.judge("honest", true).offence);
        QVERIFY(!record.judge("honest", true).offence);
        QVERIFY(!record.judge("honest", false).offence);
        QVERIFY(record.judge("honest", true).offence);
    }

    // Far off in every other round: 3 outliers of the last 5 verdicts at the 5th.
    void aSenderFarOffEveryOtherRoundOffends()
    {
        OutlierRecord record;
        int first = 0;
        for (int v = 1; v <= 12 && first == 0; ++v)
            if (record.judge("alternating", v % 2 == 1).offence)
                first = v;
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
        OutlierRecord record({6, 3, 2});
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

    // Options out of range are clamped: a window of 40 keeps 32 verdicts, and a threshold above
    // the window is the window.
    void optionsAreClampedToWhatTheRecordHolds()
    {
        OutlierRecord record({40, 50, 10});
        OutlierJudgement j;
        for (int v = 1; v <= 40; ++v)
            j = record.judge("x", true);
        QCOMPARE(j.judged, 32);
        QCOMPARE(j.outliers, 32);
        QVERIFY(j.offence);
        OutlierRecord small({2, 5, 10});
        QVERIFY(!small.judge("y", true).offence);
        QVERIFY(small.judge("y", true).offence);
    }
};

QTEST_MAIN(TestOutlierRecord)
#include "tst_outlierrecord.moc"
