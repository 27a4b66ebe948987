// EpochClock: when each epoch began as one peer saw it (the time base of the bound on claimed
// counts): its own step's end, or with delayed updates its Step decision; when the epoch became
// global, if seen; never before its Step decision at the epoch before; unknown after a jump until
// its own step.
#include "averaging/EpochClock.h"

#include <QTest>

#include <cmath>

using namespace dedloc;

class TestEpochClock final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Without delayed updates the next epoch begins when this peer's step ended (60), not at its
    // Step decision (50): the round between them would widen every stranger's allowance. With
    // delayed updates, whose shares are computed during the round, at the decision.
    void theNextEpochBeginsAtTheStepsEndOrWithDelayedUpdatesAtTheDecision()
    {
        for (const bool delayed : {false, true}) {
            EpochClock c(delayed, 3.0);
            c.sawForeignRecord(0.0);
            c.sawGlobal(4, 0.0);
            c.decidedStep(4, 50.0);
            c.ownStepEnded(5, 60.0);
            c.sawGlobal(5, 61.0); // the others' records of 5 arrive later: the first note stays
            QCOMPARE(c.began(5), delayed ? 50.0 : 60.0);
        }
    }

    // A stranger's record one epoch ahead made 5 global here at 5 s, while it lived (or a stranger
    // ended its round early and stepped first). The clock of 5 starts no earlier than this peer's
    // Step decision at 4 (58), nor, without delayed updates, than its own step into 5 (60).
    void aStrangerOneEpochAheadStartsNoClock()
    {
        for (const bool delayed : {false, true}) {
            EpochClock c(delayed, 3.0);
            c.sawForeignRecord(0.0);
            c.sawGlobal(4, 0.0);
            c.sawGlobal(5, 5.0);
            QCOMPARE(c.began(5), 5.0); // seen: 4 was global here, and records were read for 3 s
            c.decidedStep(4, 58.0);
            QCOMPARE(c.began(5), 58.0);
            c.ownStepEnded(5, 60.0);
            QCOMPARE(c.began(5), delayed ? 58.0 : 60.0);
        }
    }

    // An epoch under way when this peer started, or reached in a jump (4 -> 6), is unknown (the
    // tracker counts it as reported) until this peer's own step into it.
    void aJumpIsUnknownUntilThisPeersOwnStep()
    {
        EpochClock delayed(true, 3.0);
        delayed.sawForeignRecord(0.0);
        delayed.sawGlobal(4, 0.0);
        delayed.sawGlobal(6, 10.0);
        delayed.ownStepEnded(6, 12.0);
        QCOMPARE(delayed.began(6), 12.0);
        EpochClock c(false, 3.0);
        c.sawForeignRecord(0.0);
        c.sawGlobal(4, 0.0);
        QVERIFY(std::isnan(c.began(4))); // the first global epoch: under way at the start
        c.sawGlobal(6, 10.0);
        QVERIFY(std::isnan(c.began(6)));
        c.ownStepEnded(6, 12.0);
        QCOMPARE(c.began(6), 12.0);
        c.sawGlobal(7, 20.0);
        c.ownStepEnded(7, 50.0); // a replay, no Step decision of its own at 6: the swarm's clock
        QCOMPARE(c.began(7), 20.0);
        EpochClock fresh(false, 3.0); // records read for less than 3 s: not seen either
        fresh.sawGlobal(1, 8.0);
        fresh.sawForeignRecord(8.0);
        fresh.sawGlobal(2, 10.0);
        QVERIFY(std::isnan(fresh.began(2)));
        fresh.sawGlobal(3, 11.0);
        QCOMPARE(fresh.began(3), 11.0);
    }

    // Epochs more than two below the highest global one are forgotten. A global epoch seen
    // before this peer's own decision at the epoch before still counts from that decision.
    void oldEpochsAreForgottenAndTheDecisionBoundsAGlobalNote()
    {
        EpochClock c(false, 3.0);
        c.sawForeignRecord(0.0);
        for (long e = 1; e <= 6; ++e)
            c.sawGlobal(e, 10.0 * static_cast<double>(e));
        QCOMPARE(c.began(4), 40.0);
        QVERIFY(std::isnan(c.began(3)));
        c.sawGlobal(7, 70.0);
        QCOMPARE(c.began(7), 70.0); // no decision of this peer at 6: the global note
        c.decidedStep(6, 75.0);
        QCOMPARE(c.began(7), 75.0);
    }
};

QTEST_APPLESS_MAIN(TestEpochClock)
#include "tst_epochclock.moc"
