// The global epoch of ProgressTracker (core/averaging/ProgressTracker.h): whose epoch a peer
// resyncs to, a monitor follows and an auxiliary helps, with strangers and colluders among the
// records, on an injected clock. (Counts, ETAs and the step decision: tst_progresstracker.)
#include "ProgressRecords.h"
#include "averaging/ProgressTracker.h"

#include <QtTest>

using namespace dedloc;

namespace {

ProgressRecord rec(const std::string &id, long epoch, long samples, double sps, double time, bool client = false,
                   PeerRole role = PeerRole::Trainer)
{
    return test::progressRecord(id, epoch, samples, sps, time, client, role);
}

TrackerOptions options(long target) { return test::trackerOptions(target); }

// A trainer's record at `epoch` made at `time`, holding a state at `state` (its epoch by default).
ProgressRecord holding(const std::string &id, long epoch, double time, long state = -2)
{
    auto r = rec(id, epoch, 10, 1.0, time);
    r.stateEpoch = state == -2 ? epoch : state;
    r.stateDigest = std::string(64, 'a');
    return r;
}

// A stranger's record claiming `epoch` and, without a digest, a state there: no claim at all.
ProgressRecord claiming(const std::string &id, long epoch, double time)
{
    auto r = rec(id, epoch, 10, 1.0, time);
    r.stateEpoch = epoch;
    return r;
}

// A tracker of peer `self` at `epoch` beside honest trainers "h1".."h<n>" at the same epoch, all
// made at t = 0.
ProgressTracker honestSwarm(const std::string &self, long epoch, int n)
{
    auto opts = options(1000);
    opts.selfId = self;
    ProgressTracker t(opts);
    t.update(rec(self, epoch, 10, 1.0, 0.0), 0.0);
    for (int i = 1; i <= n; ++i)
        t.update(rec("h" + std::to_string(i), epoch, 10, 1.0, 0.0), 0.0);
    return t;
}

} // namespace

class TestGlobalEpoch final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // A trainer resyncs only to an epoch whose state it can download: a client-mode trainer
    // ahead of it serves none. A peer that does not train follows the trainers, clients included.
    void clientPeersDoNotSetTheGlobalEpoch()
    {
        ProgressTracker t(options(1000));
        t.update(rec("a", 3, 10, 1.0, 0.0), 0.0);
        t.update(rec("client", 9, 10, 1.0, 0.0, true), 0.0);
        QCOMPARE(t.global(1.0, 3).globalEpoch, 3L);
        QCOMPARE(t.global(1.0, 2).globalEpoch, 3L);
        QCOMPARE(t.global(1.0, 9).globalEpoch, 9L); // the client itself
        // An auxiliary's view: the client's 9 is more than one above anybody else's epoch.
        QCOMPARE(t.global(1.0).globalEpoch, 3L);
        QCOMPARE(t.global(1.0).clientPeers, 1);
        // With a second client at 8, two trainers of three hold 8: 9 is corroborated, not held.
        t.update(rec("client2", 8, 10, 1.0, 0.0, true), 0.0);
        QCOMPARE(t.global(1.0).globalEpoch, 8L);
        t.update(rec("client3", 9, 10, 1.0, 0.0, true), 0.0);
        QCOMPARE(t.global(1.0).globalEpoch, 9L);
        ProgressTracker onlyClients(options(1000));
        onlyClients.update(rec("c1", 4, 10, 1.0, 0.0, true), 0.0);
        onlyClients.update(rec("c2", 5, 10, 1.0, 0.0, true), 0.0);
        QCOMPARE(onlyClients.global(1.0, 4).globalEpoch, 4L);
        QCOMPARE(onlyClients.global(1.0, 5).globalEpoch, 5L);
        QCOMPARE(onlyClients.global(1.0).globalEpoch, 5L);
    }

    // Client-mode trainers beside a reachable monitor and auxiliary that hold an older epoch (the
    // monitor's last state, the auxiliary's view): the trainers' batch still counts and steps.
    // (The global epoch used to be the monitor's 0 here: no samples at it, no step, ever.)
    void clientTrainersStepBesideAMonitorAtAnOlderEpoch()
    {
        auto opts = options(100);
        opts.selfId = "c1";
        ProgressTracker t(opts);
        t.update(rec("monitor", 0, 0, 0.0, 0.0, false, PeerRole::Monitor), 0.0);
        t.update(rec("aux", 9, 0, 0.0, 0.0, false, PeerRole::Auxiliary), 0.0);
        t.update(rec("c1", 2, 60, 10.0, 0.0, true), 0.0);
        t.update(rec("c2", 2, 50, 10.0, 0.0, true), 0.0);
        QCOMPARE(t.global(0.0, 2).globalEpoch, 2L);
        QCOMPARE(t.global(0.0, 2).reportedSamples, 110L);
        QCOMPARE(int(t.decide(2, 0.0)), int(StepDecision::Step));
        QCOMPARE(t.global(0.0).globalEpoch, 2L); // what the auxiliary helps
        // A monitor whose state is ahead of a trainer is a donor: that trainer resyncs once the
        // monitor's epoch is held, not while the other trainer (at 2) outvotes it: then the full
        // batch still steps. Once that one pauses, the monitor's epoch is held.
        t.update(rec("monitor", 5, 0, 0.0, 1.0, false, PeerRole::Monitor), 1.0);
        QCOMPARE(int(t.decide(2, 1.0)), int(StepDecision::Step));
        auto paused = rec("c2", 2, 0, 0.0, 1.0, true);
        paused.paused = true;
        t.update(paused, 1.0);
        QCOMPARE(int(t.decide(2, 1.0)), int(StepDecision::Resync));
    }

    // One stranger claims epoch 10^12: no other record comes within one epoch of it, so neither a
    // trainer (at 40, beside two at 40 and a monitor at 35) nor an auxiliary nor a joiner at 0
    // believes it; the honest trainer does not resync. An epoch one ahead is believed once the
    // swarm holds it (two trainers of three stepped), and so is a lone peer's: with one other
    // peer there is nobody to compare, and half of the votes is its.
    void anUncorroboratedEpochIsIgnored()
    {
        auto opts = options(1000);
        opts.selfId = "self";
        ProgressTracker t(opts);
        t.update(rec("self", 40, 10, 1.0, 0.0), 0.0);
        t.update(rec("a", 40, 10, 1.0, 0.0), 0.0);
        t.update(rec("b", 40, 10, 1.0, 0.0), 0.0);
        t.update(rec("monitor", 35, 0, 0.0, 0.0, false, PeerRole::Monitor), 0.0);
        t.update(rec("liar", 1'000'000'000'000L, 10, 1.0, 0.0), 0.0);
        QCOMPARE(t.global(1.0, 40).globalEpoch, 40L);
        QCOMPARE(int(t.decide(40, 1.0)), int(StepDecision::Accumulate));
        QCOMPARE(t.global(1.0).globalEpoch, 40L);
        QCOMPARE(t.global(1.0, 0).globalEpoch, 40L);
        t.update(rec("a", 41, 0, 1.0, 0.5), 0.5);
        QCOMPARE(int(t.decide(40, 1.0)), int(StepDecision::Accumulate));
        t.update(rec("b", 41, 0, 1.0, 0.5), 0.5);
        QCOMPARE(int(t.decide(40, 1.0)), int(StepDecision::Resync));
        QCOMPARE(t.global(1.0, 40).globalEpoch, 41L);

        ProgressTracker alone(opts);
        alone.update(rec("self", 0, 0, 0.0, 0.0), 0.0);
        alone.update(rec("donor", 57, 10, 1.0, 0.0), 0.0);
        QCOMPARE(alone.global(1.0, 0).globalEpoch, 57L); // a joiner and the only other peer
    }

    // A monitor's own epoch is that of its last state and lags; with one trainer left it used to
    // outvote that trainer (2 is more than one above the monitor's 0), so a joiner at 0 took
    // epoch 0 for the swarm's and trained apart for good. The monitor follows the trainers one
    // epoch at a time, a stranger's jump excepted, and its record vouches for the followed epoch.
    void aMonitorFollowsTheTrainersAndVouchesForTheirEpoch()
    {
        auto opts = options(1000);
        opts.selfId = "monitor";
        ProgressTracker m(opts);
        QCOMPARE(m.followedEpoch(), -1L);
        m.update(rec("monitor", 0, 0, 0.0, 0.0, false, PeerRole::Monitor), 0.0);
        m.update(rec("a", 1, 10, 1.0, 0.0), 0.0);
        m.update(rec("b", 1, 10, 1.0, 0.0), 0.0);
        QCOMPARE(m.follow(0.5), 1L);
        // b dies (its record expires at 60); a steps on alone, one epoch at a time; a stranger jumps.
        double now = 61.0;
        for (long epoch = 2; epoch <= 4; ++epoch, now += 1.0) {
            m.update(rec("a", epoch, 0, 1.0, now), now);
            QCOMPARE(m.follow(now), epoch);
        }
        m.update(rec("liar", 1'000'000'000'000L, 10, 1.0, now), now);
        QCOMPARE(m.follow(now), 4L);
        m.update(rec("joiner", 0, 0, 1.0, now), now);
        QCOMPARE(m.global(now).globalEpoch, 4L); // its view does not fall back to the joiner's 0

        // The joiner's view: the lone trainer at 4 and the monitor at 0.
        opts.selfId = "joiner";
        ProgressTracker j(opts), before(opts);
        auto monitor = rec("monitor", 0, 0, 0.0, now, false, PeerRole::Monitor);
        for (auto *t : {&j, &before}) {
            t->update(rec("joiner", 0, 0, 1.0, now), now);
            t->update(rec("a", 4, 10, 1.0, now), now);
        }
        before.update(monitor, now);
        QCOMPARE(before.global(now, 0).globalEpoch, 0L); // without the followed epoch: apart
        monitor.followedEpoch = m.followedEpoch();
        j.update(monitor, now);
        QCOMPARE(j.global(now, 0).globalEpoch, 4L);
        QCOMPARE(int(j.decide(0, now)), int(StepDecision::Resync));
        // A followed epoch backs the trainers' epoch, not a stranger's jump beyond it.
        j.update(rec("liar", 1'000'000'000'000L, 10, 1.0, now), now);
        QCOMPARE(j.global(now, 0).globalEpoch, 4L);

        // Steps taken between two of the monitor's reads are followed, at most one a second since
        // the followed epoch last advanced; a larger jump is not.
        opts.selfId = "monitor";
        ProgressTracker m2(opts);
        m2.update(rec("monitor", 0, 0, 0.0, 0.0, false, PeerRole::Monitor), 0.0);
        m2.update(rec("a", 0, 0, 1.0, 0.0), 0.0);
        QCOMPARE(m2.follow(0.0), 0L);
        m2.update(rec("a", 3, 0, 1.0, 2.0), 2.0); // 3 above 0 after 2 s: within 1 + 2
        QCOMPARE(m2.follow(2.0), 3L);
        m2.update(rec("a", 9, 0, 1.0, 3.0), 3.0); // 6 above 3 after 1 s: a jump
        QCOMPARE(m2.follow(3.0), 3L);
        QCOMPARE(m2.follow(6.0), 3L);             // ... still, 4 s after the last advance
        QCOMPARE(m2.follow(7.0), 9L);             // 5 s: as many steps as seconds, and one
        // Beside a second trainer, the first's jumps are no longer followed.
        m2.update(rec("b", 9, 0, 1.0, 7.0), 7.0);
        m2.update(rec("a", 30, 0, 1.0, 60.0), 60.0);
        QCOMPARE(m2.follow(60.0), 9L);
    }


    // Two colluders climb by turns: A one epoch above the honest peers, B one above A, then A one
    // above B. Each claim is corroborated by the other's, and without the vote the honest peers
    // resynced to B's epoch, where only the pair could serve the state (or nobody: a trainer
    // stuck waiting for a donor). Two votes of six (five in the views that leave this peer out)
    // hold nothing: neither a trainer nor an auxiliary nor a monitor follows them, and the honest
    // batch still counts at the swarm's epoch. When the honest peers step, their epoch is held
    // and followed again.
    void colludersClimbingByTurnsHoldNoEpoch()
    {
        auto t = honestSwarm("self", 10, 3);
        auto monitorOpts = options(1000);
        monitorOpts.selfId = "monitor";
        ProgressTracker m(monitorOpts);
        for (const char *id : {"h1", "h2", "h3"})
            m.update(rec(id, 10, 10, 1.0, 0.0), 0.0);
        QCOMPARE(m.follow(0.0), 10L);
        double now = 1.0;
        for (long a = 11, b = 12; a <= 21; a += 2, b += 2, now += 1.0)
            for (auto *tracker : {&t, &m}) {
                tracker->update(rec("A", a, 10, 1.0, now), now);
                tracker->update(rec("B", b, 10, 1.0, now), now);
            }
        QCOMPARE(t.global(now, 10).globalEpoch, 10L);
        QCOMPARE(int(t.decide(10, now)), int(StepDecision::Accumulate));
        QCOMPARE(t.global(now).globalEpoch, 10L); // an auxiliary's view
        QCOMPARE(m.follow(now), 10L);
        QCOMPARE(t.global(now, 10).reportedSamples, 40L); // this peer, h1, h2 and h3
        // The other honest trainers step: 11 is held (reached by five votes of six, the pair's too).
        for (auto *tracker : {&t, &m})
            for (const char *id : {"h1", "h2", "h3"})
                tracker->update(rec(id, 11, 0, 1.0, now), now);
        QCOMPARE(int(t.decide(10, now)), int(StepDecision::Resync));
        QCOMPARE(t.global(now, 10).globalEpoch, 11L);
        QCOMPARE(m.follow(now), 11L);
        // As many colluders as honest peers are half of the votes, and win the tie: the bound
        // of an open run without admission (a closed run admits its peers).
        auto even = honestSwarm("self", 10, 1);
        even.update(rec("A", 11, 10, 1.0, 1.0), 1.0);
        even.update(rec("B", 12, 10, 1.0, 1.0), 1.0);
        QCOMPARE(even.global(1.0, 10).globalEpoch, 11L);
    }

    // A monitor that saw one honest trainer and a stranger one epoch ahead followed the stranger
    // (a tie goes to the higher epoch) and, vouching for that epoch, tipped the vote of every
    // honest trainer that appeared after: three honest trainers, two colluders and the monitor
    // made a tie again, and the honest trainers waited at step 0 for a donor of the colluders'
    // epoch. While no record holds a state at the followed epoch and more votes stand one epoch
    // below it than at it, it gives way by one; joiners below trainers that hold the state, and
    // trainers that leave, do not move it.
    void aFollowedEpochNobodyHoldsGivesWayToTheVotesBelow()
    {
        auto opts = options(1000);
        opts.selfId = "monitor";
        ProgressTracker m(opts);
        m.update(rec("monitor", 0, 0, 0.0, 0.0, false, PeerRole::Monitor), 0.0);
        m.update(holding("h1", 0, 0.0), 0.0);
        m.update(claiming("A", 1, 0.0), 0.0);
        QCOMPARE(m.follow(0.0), 1L);
        m.update(holding("h2", 0, 1.0), 1.0);
        QCOMPARE(m.follow(1.0), 0L);
        m.update(holding("h3", 0, 2.0), 2.0);
        m.update(holding("B", 2, 2.0, 0), 2.0);
        QCOMPARE(m.follow(2.0), 0L);
        // The honest trainers' view, the monitor's record vouching for what it follows.
        auto t = honestSwarm("h1", 0, 0);
        for (const char *id : {"h2", "h3"})
            t.update(rec(id, 0, 10, 1.0, 2.0), 2.0);
        t.update(rec("A", 1, 10, 1.0, 2.0), 2.0);
        t.update(rec("B", 2, 10, 1.0, 2.0), 2.0);
        auto monitor = rec("monitor", 0, 0, 0.0, 2.0, false, PeerRole::Monitor);
        monitor.followedEpoch = m.followedEpoch();
        t.update(monitor, 2.0);
        QCOMPARE(t.global(2.0, 0).globalEpoch, 0L);
        monitor = rec("monitor", 0, 0, 0.0, 2.5, false, PeerRole::Monitor);
        monitor.followedEpoch = 1; // as it was before it gave way
        t.update(monitor, 2.5);
        QCOMPARE(t.global(2.5, 0).globalEpoch, 1L);
        // The honest trainers step: 1 is held, and followed.
        for (const char *id : {"h1", "h2", "h3"})
            m.update(holding(id, 1, 3.0), 3.0);
        QCOMPARE(m.follow(3.0), 1L);

        // Both strangers before the second honest trainer: a majority of three, two against two,
        // then outvoted; or one of them leaves and the next honest trainer outvotes the other.
        ProgressTracker early(opts), left(opts);
        for (auto *e : {&early, &left}) {
            e->update(holding("A", 1, 0.0, 0), 0.0);
            e->update(holding("B", 1, 0.0, 0), 0.0);
            e->update(holding("h1", 0, 0.0), 0.0);
            QCOMPARE(e->follow(0.0), 1L);
        }
        early.update(holding("h2", 0, 1.0), 1.0);
        QCOMPARE(early.follow(1.0), 1L);
        early.update(holding("h3", 0, 2.0), 2.0);
        QCOMPARE(early.follow(2.0), 0L);
        left.update(holding("A", 1, 30.0, 0), 30.0);
        left.update(holding("h1", 0, 30.0), 30.0);
        left.update(holding("h2", 0, 61.0), 61.0); // B's record expired at 60
        QCOMPARE(left.follow(61.0), 0L);

        // Strangers climbing by turns while an honest trainer is paused (two against two) get the
        // followed epoch one above the honest state, no further; when it resumes, it gives way.
        ProgressTracker climb(opts);
        for (const char *id : {"h1", "h2"})
            climb.update(holding(id, 0, 0.0), 0.0);
        auto paused = holding("h3", 0, 0.0);
        paused.paused = true;
        climb.update(paused, 0.0);
        double now = 1.0;
        for (long a = 1; a <= 5; ++a, now += 1.0) {
            climb.update(holding("A", a, now, 0), now);
            climb.update(holding("B", a + 1, now, 0), now);
            QCOMPARE(climb.follow(now), 1L);
        }
        climb.update(holding("h3", 0, now), now);
        QCOMPARE(climb.follow(now), 0L);

        // Not moved: joiners at 0 beside a lone trainer that stepped to 1 ...
        ProgressTracker lone(opts);
        lone.update(holding("a", 0, 0.0), 0.0);
        QCOMPARE(lone.follow(0.0), 0L);
        lone.update(holding("a", 1, 1.0), 1.0);
        QCOMPARE(lone.follow(1.0), 1L);
        for (const char *id : {"j1", "j2"})
            lone.update(rec(id, 0, 0, 0.0, 2.0), 2.0);
        QCOMPARE(lone.follow(2.0), 1L);
        // ... or peers resuming one epoch behind a trainer that stepped beside another.
        ProgressTracker pair(opts);
        pair.update(holding("a", 6, 0.0), 0.0);
        pair.update(holding("b", 5, 0.0), 0.0);
        QCOMPARE(pair.follow(0.0), 6L);
        for (const char *id : {"r1", "r2"})
            pair.update(holding(id, 5, 1.0), 1.0);
        QCOMPARE(pair.follow(1.0), 6L);
        // ... or joiners two epochs below an epoch nobody holds: only the epoch below counts.
        ProgressTracker two(opts);
        two.update(holding("x", 1, 0.0), 0.0);
        two.update(holding("S", 2, 0.0, 1), 0.0);
        QCOMPARE(two.follow(0.0), 2L);
        for (const char *id : {"j1", "j2", "j3"})
            two.update(holding(id, 0, 1.0), 1.0);
        QCOMPARE(two.follow(1.0), 2L);
    }

    // A syncing peer still votes. Two colluders, one and two epochs ahead, send the honest peers
    // after their epoch for a moment (here: two honest trainers still downloading an older state);
    // had syncing peers lost their vote, the pair would hold the vote against the one trainer
    // left voting, and every honest peer sent after it would in turn fall silent (the honest
    // trainers of tst_hostilepeer waited at step 0 for a donor of the pair's epoch that way).
    void syncingPeersStillVote()
    {
        auto t = honestSwarm("self", 10, 0);
        for (const char *id : {"h1", "h2"}) {
            auto r = rec(id, 10, 0, 0.0, 0.0);
            r.syncing = true;
            t.update(r, 0.0);
        }
        t.update(rec("A", 11, 10, 1.0, 0.0), 0.0);
        t.update(rec("B", 12, 10, 1.0, 0.0), 0.0);
        QCOMPARE(t.global(1.0, 10).globalEpoch, 10L);
        QCOMPARE(int(t.decide(10, 1.0)), int(StepDecision::Accumulate));
    }

    // A paused peer stays at the epoch it paused at while the swarm moves on: it votes for
    // nothing. Three paused trainers far behind outvoted the two active ones (the one behind then
    // never resynced to the other's epoch), and a monitor stopped following.
    void pausedPeersDoNotVote()
    {
        auto t = honestSwarm("self", 99, 0);
        t.update(rec("ahead", 100, 10, 1.0, 0.0), 0.0);
        auto m = honestSwarm("monitor", 0, 0);
        m.update(rec("a", 99, 10, 1.0, 0.0), 0.0);
        m.update(rec("b", 99, 10, 1.0, 0.0), 0.0);
        QCOMPARE(m.follow(0.0), 99L);
        m.update(rec("b", 100, 10, 1.0, 0.5), 0.5);
        m.update(rec("a", 100, 10, 1.0, 0.5), 0.5);
        for (const long at : {60L, 70L, 80L}) {
            auto r = rec("paused" + std::to_string(at), at, 0, 0.0, 0.0);
            r.paused = true;
            t.update(r, 0.0);
            m.update(r, 0.0);
        }
        QCOMPARE(t.global(1.0, 99).globalEpoch, 100L);
        QCOMPARE(int(t.decide(99, 1.0)), int(StepDecision::Resync));
        QCOMPARE(m.follow(1.0), 100L);
        QCOMPARE(t.global(1.0).globalEpoch, 100L); // an auxiliary's view
    }

    // A peer that does not train follows a trainer above the held epoch as far as that epoch, not
    // back to 0: two trainers stepped to 6 while four monitors still vouch for 5.
    void aViewWithoutTrainingFollowsAsFarAsTheEpochIsHeld()
    {
        auto opts = options(1000);
        opts.selfId = "aux";
        ProgressTracker t(opts);
        t.update(rec("aux", 5, 0, 0.0, 0.0, false, PeerRole::Auxiliary), 0.0);
        for (const char *id : {"m1", "m2", "m3", "m4"})
            t.update(rec(id, 5, 0, 0.0, 0.0, false, PeerRole::Monitor), 0.0);
        t.update(rec("a", 6, 10, 1.0, 0.0), 0.0);
        t.update(rec("b", 6, 10, 1.0, 0.0), 0.0);
        QCOMPARE(t.global(1.0).globalEpoch, 5L);
        // Nobody votes (every trainer paused): the trainers' epoch, as before the vote.
        ProgressTracker quiet(opts);
        for (const char *id : {"c", "d"}) {
            auto r = rec(id, 7, 0, 0.0, 0.0);
            r.paused = true;
            quiet.update(r, 0.0);
        }
        QCOMPARE(quiet.global(1.0).globalEpoch, 7L);
    }
};

QTEST_GUILESS_MAIN(TestGlobalEpoch)
#include "tst_globalepoch.moc"
