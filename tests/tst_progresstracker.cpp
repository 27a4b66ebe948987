// Collaborative progress and the step trigger (core/averaging/ProgressTracker.h), on an injected clock.
#include "ProgressRecords.h"
#include "averaging/ProgressTracker.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using namespace dedloc;

namespace {

ProgressRecord rec(const std::string &id, long epoch, long samples, double sps, double time, bool client = false,
                   PeerRole role = PeerRole::Trainer)
{
    return test::progressRecord(id, epoch, samples, sps, time, client, role);
}

// Records of the peers `ids`, all made and read at `time`.
void publish(ProgressTracker &t, std::initializer_list<const char *> ids, long epoch, long samples, double rate,
             double time)
{
    for (const char *id : ids)
        QVERIFY(t.update(rec(id, epoch, samples, rate, time), time));
}

// Three honest peers at 10 samples/s, at epoch 1 from t = 0 and at epoch 2 from t = 10, read at
// both times: this tracker sees epoch 2 begin at 10.
void honestSwarmEntersEpochTwoAtTen(ProgressTracker &t)
{
    publish(t, {"a", "b", "c"}, 1, 0, 10.0, 0.0);
    QCOMPARE(t.global(0.0, 1).globalEpoch, 1L);
    publish(t, {"a", "b", "c"}, 2, 0, 10.0, 10.0);
    QCOMPARE(t.global(10.0, 1).globalEpoch, 2L);
}

TrackerOptions options(long target) { return test::trackerOptions(target); }

} // namespace

class TestProgressTracker final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Peers whose records expired are forgotten (a swarm with churn must not keep every peer it
    // ever saw), and an old copy of a forgotten record is not taken back.
    void expiredPeersAreForgotten()
    {
        ProgressTracker t(options(1000));
        for (int i = 0; i < 50; ++i)
            QVERIFY(t.update(rec("gone-" + std::to_string(i), 0, 0, 1.0, 100.0), 100.0)); // expire at 160
        QCOMPARE(t.stored(), std::size_t{50});
        QVERIFY(t.update(rec("alive", 0, 0, 1.0, 170.0), 170.0));
        QCOMPARE(t.stored(), std::size_t{1});
        QVERIFY(!t.update(rec("gone-3", 0, 0, 1.0, 100.0), 170.0));
        QCOMPARE(t.liveRecords(170.0).size(), std::size_t{1});
    }

    // Expected in a group at epoch 10 (lag 3, records at most 8 s old): trainers at 7..10 that
    // are neither paused nor syncing, peers that do not train whatever their epoch if they
    // average, never the asking peer itself.
    void expectedPeersLeaveOutSyncingPausedAndStale()
    {
        ProgressTracker t(options(1000));
        auto with = [](ProgressRecord r, auto change) {
            change(r);
            return r;
        };
        const double now = 100.0;
        QVERIFY(t.update(rec("self", 10, 0, 1.0, now), now));
        QVERIFY(t.update(rec("at", 10, 0, 1.0, now), now));
        QVERIFY(t.update(rec("lagging", 7, 0, 1.0, now), now));
        QVERIFY(t.update(rec("far-behind", 6, 0, 1.0, now), now));
        QVERIFY(t.update(rec("ahead", 11, 0, 1.0, now), now));
        QVERIFY(t.update(with(rec("syncing", 9, 0, 0.0, now), [](auto &r) { r.syncing = true; }), now));
        QVERIFY(t.update(with(rec("paused", 10, 0, 0.0, now), [](auto &r) { r.paused = true; }), now));
        QVERIFY(t.update(rec("stale", 10, 0, 1.0, now - 9.0), now));
        QVERIFY(t.update(rec("aux", 3, 0, 0.0, now, false, PeerRole::Auxiliary), now));
        QVERIFY(t.update(with(rec("monitor", 0, 0, 0.0, now, false, PeerRole::Monitor), [](auto &r) { r.averages = false; }),
                         now));
        QVERIFY(t.update(with(rec("reducer", 0, 0, 0.0, now, false, PeerRole::Monitor), [](auto &r) { r.averages = true; }),
                         now));
        auto expected = t.expectedPeers("self", 10, 3, 8.0, now);
        std::sort(expected.begin(), expected.end());
        QCOMPARE(expected, (std::vector<std::string>{"at", "aux", "lagging", "reducer"}));
    }

    void globalEpochAndExtrapolatedSamples()
    {
        ProgressTracker t(options(1000));
        QVERIFY(t.update(rec("a", 7, 100, 10.0, 100.0), 100.0));
        QVERIFY(t.update(rec("b", 7, 200, 20.0, 102.0), 102.0));
        QVERIFY(t.update(rec("c", 6, 900, 50.0, 102.0), 102.0)); // behind: counts nothing
        const auto g = t.global(110.0);
        QCOMPARE(g.globalEpoch, 7L);
        QCOMPARE(g.peers, 3);
        QCOMPARE(g.reportedSamples, 300L);
        // a: 100 + 10 * 10 = 200; b: 200 + 20 * 8 = 360
        QCOMPARE(g.samplesAccumulated, 560.0);
        QCOMPARE(g.samplesPerSecond, 30.0);
        QCOMPARE(g.eta, 440.0 / 30.0);
    }

    void newestRecordWinsAndStaleOrBadOnesAreRefused()
    {
        ProgressTracker t(options(1000));
        QVERIFY(t.update(rec("a", 2, 500, 5.0, 50.0), 50.0));
        QVERIFY(!t.update(rec("a", 1, 10, 5.0, 40.0), 50.0)); // older copy from another DHT node
        QCOMPARE(t.global(50.0).globalEpoch, 2L);
        QVERIFY(!t.update(rec("a", 2, 600, 5.0, 50.0), 50.0)); // same timestamp: keep the first
        QVERIFY(!t.update(rec("b", 2, 1, 1.0, 60.0), 50.0));   // 10 s in the future > 3 s skew
        QVERIFY(t.update(rec("b", 2, 1, 1.0, 52.0), 50.0));    // 2 s ahead: tolerated
        auto expired = rec("c", 2, 1, 1.0, 0.0);
        expired.expiresAt = 49.0;
        QVERIFY(!t.update(expired, 50.0));
        QVERIFY(!t.update(rec("d", -1, 1, 1.0, 50.0), 50.0));
        QVERIFY(!t.update(rec("e", 1, -5, 1.0, 50.0), 50.0));
        QVERIFY(!t.update(rec("f", 1, 5, std::nan(""), 50.0), 50.0));
        QVERIFY(!t.update(rec("", 1, 5, 1.0, 50.0), 50.0));
        // Claims no honest peer makes: more than twice the target batch, a million samples/s.
        QVERIFY(t.update(rec("g", 2, 2000, 1e6, 50.0), 50.0));
        QVERIFY(!t.update(rec("h", 2, 2001, 1.0, 50.0), 50.0));
        QVERIFY(!t.update(rec("i", 2, 5, 1.1e6, 50.0), 50.0));
        // and those two are the ones a reader strikes the signer for, with the claim in the reason
        QVERIFY(impossibleClaim(rec("g", 2, 2000, 1e6, 50.0), 1000).empty());
        QVERIFY(impossibleClaim(rec("h", 2, 2001, 1.0, 50.0), 1000).find("2001 samples") != std::string::npos);
        QVERIFY(!impossibleClaim(rec("i", 2, 5, 1.1e6, 50.0), 1000).empty());
    }

    void silentPeersExpire()
    {
        ProgressTracker t(options(100));
        t.update(rec("a", 1, 90, 1.0, 0.0), 0.0);
        t.update(rec("b", 1, 5, 1.0, 30.0), 30.0);
        QCOMPARE(t.global(59.0).peers, 2);
        const auto g = t.global(61.0); // a expired at 60
        QCOMPARE(g.peers, 1);
        QCOMPARE(g.reportedSamples, 5L);
    }

    void decisions_data()
    {
        QTest::addColumn<long>("localEpoch");
        QTest::addColumn<long>("reportedA");
        QTest::addColumn<long>("reportedB");
        QTest::addColumn<double>("now");
        QTest::addColumn<int>("expected");
        // Peers a and b at epoch 4, 10 samples/s each, reports made at t = 0; target 100.
        QTest::newRow("accumulate") << 4L << 20L << 20L << 0.0 << int(StepDecision::Accumulate);
        QTest::newRow("reported reach target") << 4L << 60L << 40L << 0.0 << int(StepDecision::Step);
        QTest::newRow("extrapolation completes a real batch") << 4L << 30L << 30L << 2.0 << int(StepDecision::Step);
        QTest::newRow("guard: stale rate on a tiny batch") << 4L << 2L << 2L << 10.0 << int(StepDecision::Accumulate);
        QTest::newRow("one epoch behind: resync") << 3L << 0L << 0L << 0.0 << int(StepDecision::Resync);
        QTest::newRow("two epochs behind: resync") << 2L << 0L << 0L << 0.0 << int(StepDecision::Resync);
    }

    void decisions()
    {
        QFETCH(long, localEpoch);
        QFETCH(long, reportedA);
        QFETCH(long, reportedB);
        QFETCH(double, now);
        QFETCH(int, expected);
        ProgressTracker t(options(100));
        t.update(rec("a", 4, reportedA, 10.0, 0.0), 0.0);
        t.update(rec("b", 4, reportedB, 10.0, 0.0), 0.0);
        QCOMPARE(int(t.decide(localEpoch, now)), expected);
    }

    void matchmakingStartsShortlyBeforeTheStep()
    {
        ProgressTracker t(options(1000));
        t.update(rec("a", 1, 800, 20.0, 0.0), 0.0); // ETA 200 / 20 = 10 s
        QVERIFY(!t.shouldStartMatchmaking(1, 0.0));
        QVERIFY(!t.shouldStartMatchmaking(1, 4.9));
        QVERIFY(t.shouldStartMatchmaking(1, 5.1)); // ETA 4.9 s <= 5 s matchmaking time
        QVERIFY(!t.shouldStartMatchmaking(0, 5.1)); // behind: resync first
    }

    // Claims bounded by throughput: a fourth peer claims the whole target batch at t = 10.5. It
    // counts what a peer at the cap (8 x the median rate) computes since the epoch began, plus
    // the slack: 80 x (11 - 10 + 1) = 160, not 1000 (before: a Step on 30 honest samples).
    void aWholeBatchClaimedAtOnceCountsWhatTheCapAllows()
    {
        ProgressTracker t(options(1000));
        honestSwarmEntersEpochTwoAtTen(t);
        QVERIFY(t.update(rec("liar", 2, 1000, 10.0, 10.5), 10.5));
        publish(t, {"a", "b", "c"}, 2, 10, 10.0, 11.0);
        const auto g = t.global(11.0, 2);
        QCOMPARE(g.reportedSamples, 190L);
        QCOMPARE(g.samplesAccumulated, 190.0);
        QCOMPARE(int(t.decide(2, 11.0)), int(StepDecision::Accumulate));
        // The allowance grows at the cap: with the honest peers extrapolated, the step comes when
        // 30 + 30 (t - 11) + 80 (t - 9) reaches 1000, at t = 18.4, on about 250 honest samples:
        // the liar counted like a peer computing 8 times the median rate, no more.
        QCOMPARE(int(t.decide(2, 18.3)), int(StepDecision::Accumulate));
        QCOMPARE(int(t.decide(2, 18.4)), int(StepDecision::Step));
    }

    // A rate claimed far above the swarm's counts at the cap, in the extrapolation and the ETA;
    // the cap is 8 x the median (of an even count: the mean of the middle two).
    void aRateAboveTheSwarmsCountsAtTheCap()
    {
        ProgressTracker t(options(100000));
        honestSwarmEntersEpochTwoAtTen(t);
        QVERIFY(t.update(rec("liar", 2, 0, 1e5, 10.0), 10.0));
        const auto g = t.global(12.0, 2);
        QCOMPARE(g.samplesPerSecond, 3 * 10.0 + 8 * 10.0); // median 10: the liar's rate counts 80
        QCOMPARE(g.samplesAccumulated, 3 * 20.0 + 160.0);
        ProgressTracker even(options(100000));
        const std::vector<std::pair<const char *, double>> rates{{"a", 2.0}, {"b", 4.0}, {"c", 6.0}, {"d", 100.0}};
        for (const auto &[id, rate] : rates)
            even.update(rec(id, 1, 0, rate, 0.0), 0.0);
        QCOMPARE(even.global(0.0, 1).samplesPerSecond, 2.0 + 4.0 + 6.0 + 40.0); // median 5, cap 40
    }

    // The cap follows the swarm: peers 1 to 4 times the median's speed count exactly; one 100
    // times faster than the others counts at the cap (a later step on a larger batch). Without
    // the cap (a closed run) it counts in full.
    void onlyPeersBeyondTheCapAreCountedBelowTheirClaims()
    {
        auto swarm = [](double maxRateOverMedian, const std::vector<std::pair<const char *, double>> &rates) {
            auto o = options(100000);
            o.maxRateOverMedian = maxRateOverMedian;
            ProgressTracker t(o);
            for (const auto &[id, rate] : rates)
                t.update(rec(id, 2, 0, rate, 0.0), 0.0);
            static_cast<void>(t.global(0.0, 2)); // the reader looks at 0 and at 10
            for (const auto &[id, rate] : rates)
                t.update(rec(id, 3, 0, rate, 10.0), 10.0);
            static_cast<void>(t.global(10.0, 2)); // epoch 3 begins here
            for (const auto &[id, rate] : rates) // 10 s of computing since
                t.update(rec(id, 3, static_cast<long>(rate * 10), rate, 20.0), 20.0);
            return t.global(20.0, 3);
        };
        const auto honest = swarm(8.0, {{"a", 5.0}, {"b", 10.0}, {"c", 20.0}, {"d", 40.0}});
        QCOMPARE(honest.samplesAccumulated, 750.0);
        QCOMPARE(honest.samplesPerSecond, 75.0);
        // cap 8 x 1 = 8 samples/s: the fast peer counts 8 x (20 - 10 + 1) = 88 of its 1000.
        const std::vector<std::pair<const char *, double>> mixed{{"a", 1.0}, {"b", 1.0}, {"c", 1.0}, {"gpu", 100.0}};
        QCOMPARE(swarm(8.0, mixed).samplesAccumulated, 30.0 + 88.0);
        QCOMPARE(swarm(8.0, mixed).samplesPerSecond, 3.0 + 8.0);
        QCOMPARE(swarm(std::numeric_limits<double>::infinity(), mixed).samplesAccumulated, 1030.0);
    }

    // A sender's PARTs count for at most what its records were counted for (plus what a peer at
    // the cap computes in the clock skew), a sender without a record for the allowance; no cap,
    // no bound.
    void weightsAreBoundedByWhatTheRecordsCountedFor()
    {
        ProgressTracker t(options(1000));
        honestSwarmEntersEpochTwoAtTen(t);
        QVERIFY(t.update(rec("a", 2, 100, 10.0, 20.0), 20.0));
        QVERIFY(t.update(rec("liar", 2, 1000, 10.0, 20.0), 20.0));
        const auto b = t.weightBounds(2, 21.0);
        // cap 80; allowance 80 x (21 - 10 + 3) = 1120 (the clock skew as the slack: a reducer that
        // does not train sees an epoch begin a read late); a record may lag by the skew too
        QCOMPARE(b.perPeer.at("a"), 100.0 + 10.0 + 80.0 * 3);
        QCOMPARE(b.perPeer.at("liar"), 1120.0);
        QCOMPARE(b.perPeer.at("b"), 0.0 + 10.0 * 11 + 80.0 * 3); // its record of t = 10, extrapolated
        QCOMPARE(b.others, 1120.0);
        QCOMPARE(b.perPeer.size(), std::size_t(4));
        auto closed = options(1000);
        closed.maxRateOverMedian = std::numeric_limits<double>::infinity();
        ProgressTracker c(closed);
        honestSwarmEntersEpochTwoAtTen(c);
        QVERIFY(c.weightBounds(2, 21.0).perPeer.empty() && std::isinf(c.weightBounds(2, 21.0).others));
    }

    // A tracker that starts in the middle of an epoch did not see it begin: it takes the counts
    // as reported there (a joiner's first reads, its own record first; its jump to the swarm's
    // epoch by a download sees no beginning either), and bounds those of the epochs after.
    void anEpochUnderWayAtTheStartIsNotBounded()
    {
        auto o = options(1000);
        o.selfId = "me";
        ProgressTracker t(o);
        QVERIFY(t.update(rec("me", 0, 0, 0.0, 0.0), 0.0));   // its own record, before any read
        QVERIFY(t.update(rec("a", 5, 600, 10.0, 8.0), 8.0)); // the first reads, 8 s later
        QVERIFY(t.update(rec("b", 5, 500, 10.0, 9.0), 9.0));
        QCOMPARE(t.global(9.0, 5).reportedSamples, 1100L);
        QVERIFY(t.update(rec("me", 5, 0, 10.0, 9.2), 9.2)); // downloaded the state of epoch 5
        QCOMPARE(t.global(9.2, 5).reportedSamples, 1100L);
        QCOMPARE(int(t.decide(5, 9.2)), int(StepDecision::Step));
        QVERIFY(t.update(rec("me", 6, 0, 10.0, 9.5), 9.5)); // its step ended: epoch 6 begins here
        QVERIFY(t.update(rec("a", 6, 600, 10.0, 10.0), 10.0));
        QVERIFY(t.update(rec("b", 6, 900, 10.0, 10.0), 10.0));
        QCOMPARE(t.global(10.0, 6).reportedSamples, 2L * 120); // both at 80 x (10 - 9.5 + 1)
        QCOMPARE(t.global(20.0, 6).reportedSamples, 600L + 900L); // 80 x 11.5 = 920 each
    }

    // An epoch's beginning is when this tracker decided to step at the epoch before: a delayed
    // step's records of the next epoch, which carry the shares computed during the round, count
    // from then, not from when they arrive; and a stranger's record at an epoch nobody else is
    // at sets no beginning for it.
    void withDelayedUpdatesTheNextEpochBeginsAtThisPeersStepDecision()
    {
        auto o = options(1000);
        o.delayedUpdates = true;
        ProgressTracker t(o);
        publish(t, {"a", "b"}, 4, 0, 10.0, 0.0);
        t.update(rec("liar", 6, 0, 10.0, 1.0), 1.0); // no beginning for 6: it is not global
        QCOMPARE(t.global(1.0, 4).globalEpoch, 4L); // the stranger at 6 is not corroborated
        publish(t, {"a", "b"}, 4, 500, 10.0, 50.0);
        QCOMPARE(int(t.decide(4, 50.0)), int(StepDecision::Step));
        publish(t, {"a", "b"}, 5, 300, 10.0, 80.0); // shares computed during a 30 s round
        // From the decision at 50: 80 x 31 each, so both count in full (from their arrival: 80).
        QCOMPARE(t.global(80.0, 5).reportedSamples, 600L);
        t.update(rec("liar", 6, 1000, 10.0, 85.0), 85.0);
        t.update(rec("a", 6, 0, 10.0, 85.0), 85.0);
        QCOMPARE(t.global(85.0, 5).globalEpoch, 6L); // 6 becomes global here at 85
        QCOMPARE(t.global(86.0, 6).reportedSamples, 80L * (86 - 85 + 1)); // not from the claim at 1
    }

    // Without delayed updates nobody computes for an epoch before its step ended: the epoch
    // begins when this peer's own record shows it, not at its Step decision (which a round of
    // seconds, and a stranger's claims during it, would widen). With delayed updates, at the
    // decision.
    void theNextEpochBeginsWhenThisPeersStepEnds()
    {
        for (const bool delayed : {false, true}) {
            auto o = options(1000);
            o.selfId = "me";
            o.delayedUpdates = delayed;
            ProgressTracker t(o);
            publish(t, {"me", "a", "b"}, 4, 0, 10.0, 0.0);
            publish(t, {"me", "a", "b"}, 4, 400, 10.0, 40.0);
            QCOMPARE(int(t.decide(4, 50.0)), int(StepDecision::Step));
            QVERIFY(t.update(rec("me", 5, 0, 10.0, 60.0), 60.0)); // a 10 s round ended
            publish(t, {"a", "b"}, 5, 300, 10.0, 61.0);
            QCOMPARE(t.global(61.0, 5).reportedSamples, delayed ? 600L : 2L * 80 * (61 - 60 + 1));
        }
    }

    void noThroughputMeansNoEta()
    {
        ProgressTracker t(options(1000));
        t.update(rec("a", 1, 10, 0.0, 0.0), 0.0);
        QVERIFY(std::isinf(t.global(1.0).eta));
        QVERIFY(!t.shouldStartMatchmaking(1, 1.0));
    }
};

QTEST_APPLESS_MAIN(TestProgressTracker)
#include "tst_progresstracker.moc"
