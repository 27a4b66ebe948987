// Progress records in shards (core/averaging/ProgressShards.h): shard assignment, the layout's
// changes, tallies and their checks, and a tracker that reads one shard and the others' tallies
// counting as one that reads every record.
#include "ProgressRecords.h"
#include "ShardedSwarm.h"
#include "averaging/ProgressShards.h"
#include "averaging/ProgressTracker.h"
#include "net/WireMessage.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace dedloc;
using namespace dedloc::test;

namespace {

// A tracker of `self` (at `epoch`) that holds the records of its shard among `records` and the
// tallies of the others, as a peer of a swarm in `k` shards does.
ProgressTracker shardedView(const std::string &self, const std::vector<ProgressRecord> &records, int k, double now,
                            long target)
{
    auto o = test::trackerOptions(target);
    o.selfId = self;
    ProgressTracker t(o);
    std::vector<ShardTally> tallies;
    for (int s = 0; s < k; ++s)
        if (s != shardOf(self, k)) {
            auto tally = tallyShard(records, k, s, now);
            tally.expiresAt = now + 30.0;
            tallies.push_back(tally);
        }
    for (const auto &r : inShard(records, k, shardOf(self, k)))
        t.update(r, now);
    t.setShardTallies(tallies);
    return t;
}

ShardTally tallyOf(const std::string &by, int shard, int peers, double time = 100.0)
{
    ShardTally t;
    t.summarizer = by;
    t.shardCount = 4;
    t.shard = shard;
    t.peers = peers;
    t.time = time;
    t.expiresAt = time + 30.0;
    return t;
}

} // namespace

class TestProgressShards final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // The shards at 2K split those at K in two (a peer's shard at K is its shard at 2K modulo K),
    // and ids spread evenly over them.
    void shardsAtTwiceTheCountSplitThoseBefore()
    {
        const auto ids = peerIds(1000, 7);
        std::vector<int> sizes(16, 0);
        for (const auto &id : ids) {
            for (int k = 1; k <= 512; k *= 2)
                QCOMPARE(shardOf(id, 2 * k) % k, shardOf(id, k));
            ++sizes[static_cast<std::size_t>(shardOf(id, 16))];
        }
        // 62.5 expected per shard, standard deviation ~7.7.
        for (const int n : sizes)
            QVERIFY2(n >= 30 && n <= 100, qPrintable(QString::number(n)));
        QCOMPARE(shardOf("not-hex-at-all", 16), 0);
        QCOMPARE(shardOf("0000000f", 16), 15);
        QCOMPARE(shardKind(1, 0), std::string("progress"));
        QCOMPARE(shardKind(8, 3), std::string("progress/8/3"));
    }

    // K grows past capacity x K to the smallest power of two that holds the swarm, and halves
    // only under a quarter of capacity x K.
    void theLayoutGrowsPastCapacityAndHalvesUnderAQuarter()
    {
        ShardLayout l(64);
        QVERIFY(!l.update(64, 0.0));
        QCOMPARE(l.count(), 1);
        QVERIFY(l.update(65, 1.0));
        QCOMPARE(l.count(), 2);
        QVERIFY(!l.update(40, 2.0)); // 40 >= 128 / 4: stays
        QCOMPARE(l.count(), 2);
        QVERIFY(l.update(31, 3.0));
        QCOMPARE(l.count(), 1);
        QVERIFY(l.update(300, 4.0)); // 256 < 300 <= 512
        QCOMPARE(l.count(), 8);
        QVERIFY(l.update(100, 5.0)); // 100 < 512 / 4: one halving a turn
        QCOMPARE(l.count(), 4);
    }

    // A larger K seen in a live record is adopted at once, unless this peer's estimate would
    // halve it again or this peer halved that K itself in the last 2 x ShardChangeSeconds; a K
    // seen more than ShardChangeSeconds ago is not.
    void aLargerCountSeenIsAdoptedUnlessThisPeerJustLeftIt()
    {
        ShardLayout l(64);
        l.saw(4, 0.0);
        QVERIFY(!l.update(50, 1.0)); // 4 x 50 < 64 x 4: a swarm this small would halve 4 again
        QCOMPARE(l.count(), 1);
        QVERIFY(l.update(70, 1.0));
        QCOMPARE(l.count(), 4);
        l.saw(4, 2.0);
        QVERIFY(l.update(10, 2.0)); // 10 < 256 / 4: halves, although others still use 4
        QCOMPARE(l.count(), 2);
        l.saw(4, 3.0);
        QVERIFY(!l.update(70, 3.0)); // 4 x 70 >= 64 x 4, but this peer just left 4
        QCOMPARE(l.count(), 2);
        l.saw(4, 2.0 + 2 * ShardChangeSeconds + 1.0); // the others stayed at 4: follow them again
        QVERIFY(l.update(70, 2.0 + 2 * ShardChangeSeconds + 1.0));
        QCOMPARE(l.count(), 4);

        ShardLayout stale(64);
        stale.saw(4, 0.0);
        QVERIFY(stale.update(70, ShardChangeSeconds + 1.0)); // its own estimate alone: 2
        QCOMPARE(stale.count(), 2);
    }

    // For ShardChangeSeconds after a change a peer publishes under its old key too and reads its
    // part of every K it saw; the tallies of its K once there are several shards.
    void duringAChangeBothKeysArePublishedAndRead()
    {
        const std::string self = "00000005" + std::string(24, '0'); // shard 5 of 8, 1 of 2 and 4
        ShardLayout l(64);
        QVERIFY(l.update(100, 10.0));
        QCOMPARE(l.count(), 2);
        QCOMPARE(l.publishKinds(self, 20.0), (std::vector<std::string>{"progress/2/1", "progress"}));
        QCOMPARE(l.readKinds(self, 20.0), (std::vector<std::string>{"progress/2/1", "progress", "progress/2/tallies"}));
        QCOMPARE(l.publishKinds(self, 10.0 + ShardChangeSeconds + 1.0), (std::vector<std::string>{"progress/2/1"}));
        // Peers already at 8: this peer's part of them is shards 1, 3, 5 and 7 of 8.
        // A smaller K's record (a joiner's first) is not followed there once this peer's own
        // change is over.
        l.saw(8, 80.0);
        l.saw(1, 80.0);
        QCOMPARE(l.readKinds(self, 80.0), (std::vector<std::string>{"progress/2/1", "progress/8/1", "progress/8/3",
                                                                    "progress/8/5", "progress/8/7",
                                                                    "progress/2/tallies"}));
    }

    void talliesRoundTrip()
    {
        const auto ids = peerIds(40, 3);
        auto records = swarm(ids, 9, 100.0);
        records[0].paused = true;
        records[1].role = PeerRole::Auxiliary;
        records[2].clientMode = true;
        for (const std::size_t i : {4, 5, 6, 7, 8, 9}) // monitors, more than a tally names
            records[i].role = PeerRole::Monitor;
        const int shard = shardOf(ids[3], 2);
        const auto t = tallyShard(records, 2, shard, 101.0);
        int inShard = 0;
        for (const auto &id : ids)
            inShard += shardOf(id, 2) == shard ? 1 : 0;
        QCOMPARE(t.peers, inShard);
        QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)parseTally(signedTally(encodeTally(t), "s1", std::nan(""))));
        const auto back = parseTally(signedTally(encodeTally(t), "s1", 101.0));
        QCOMPARE(back.summarizer, std::string("s1"));
        QCOMPARE(back.shardCount, 2);
        QCOMPARE(back.shard, shard);
        QCOMPARE(back.peers, t.peers);
        QCOMPARE(back.clients, t.clients);
        QCOMPARE(back.helpers, t.helpers);
        QVERIFY(back.support == t.support);
        QVERIFY(back.votes == t.votes);
        QCOMPARE(back.epochs.size(), t.epochs.size());
        std::size_t monitors = 0;
        for (const auto &r : records)
            monitors += r.role == PeerRole::Monitor && shardOf(r.peerId, 2) == shard ? 1 : 0;
        QVERIFY(monitors > 0);
        QCOMPARE(t.monitors.size(), std::min(monitors, MaxTallyMonitors));
        QVERIFY(std::is_sorted(t.monitors.begin(), t.monitors.end()));
        QVERIFY(back.monitors == t.monitors);
        for (const auto &id : t.monitors)
            QCOMPARE(shardOf(id, 2), shard);
        double samples = 0.0;
        for (std::size_t i = 0; i < t.epochs.size(); ++i) {
            QCOMPARE(back.epochs[i].epoch, t.epochs[i].epoch);
            QCOMPARE(back.epochs[i].peers, t.epochs[i].peers);
            QCOMPARE(back.epochs[i].donors, t.epochs[i].donors);
            QCOMPARE(back.epochs[i].samples, t.epochs[i].samples);
            samples += t.epochs[i].samples;
        }
        // Each record's samples extrapolated by its rate for the 1 s since it was made.
        double expected = 0.0;
        for (const auto &r : records)
            if (shardOf(r.peerId, 2) == shard)
                expected += static_cast<double>(r.samplesAccumulated) + r.samplesPerSecond;
        QCOMPARE(samples, expected);
    }

    void malformedTalliesAreRefused_data()
    {
        QTest::addColumn<QString>("payload");
        const char *epochs = R"("ep":[[3,2,2,2,2,10.0,12.0,5.0]])";
        auto with = [&](const char *head, const char *ep) {
            return QString::fromStdString(std::string("{") + head + "," + ep + "}");
        };
        QTest::newRow("valid") << with(R"("K":4,"s":1,"p":2,"c":0,"x":0,"su":[[3,2]],"v":[[3,2]])", epochs);
        QTest::newRow("not a power of two") << with(R"("K":3,"s":1,"p":2,"c":0,"x":0,"su":[],"v":[])", epochs);
        QTest::newRow("one shard") << with(R"("K":1,"s":0,"p":2,"c":0,"x":0,"su":[],"v":[])", epochs);
        QTest::newRow("shard out of range") << with(R"("K":4,"s":4,"p":2,"c":0,"x":0,"su":[],"v":[])", epochs);
        QTest::newRow("too many peers") << with(R"("K":4,"s":1,"p":4097,"c":0,"x":0,"su":[],"v":[])", epochs);
        QTest::newRow("more clients than peers") << with(R"("K":4,"s":1,"p":2,"c":3,"x":0,"su":[],"v":[])", epochs);
        QTest::newRow("votes beyond the peers") << with(R"("K":4,"s":1,"p":2,"c":0,"x":0,"su":[],"v":[[3,2],[4,1]])", epochs);
        QTest::newRow("epochs beyond the peers")
            << with(R"("K":4,"s":1,"p":2,"c":0,"x":0,"su":[],"v":[])", R"("ep":[[3,2,2,2,2,1,1,1],[4,1,1,1,1,1,1,1]])");
        QTest::newRow("negative rate")
            << with(R"("K":4,"s":1,"p":2,"c":0,"x":0,"su":[],"v":[])", R"("ep":[[3,2,2,2,2,10.0,12.0,-5.0]])");
        QTest::newRow("not finite")
            << with(R"("K":4,"s":1,"p":2,"c":0,"x":0,"su":[],"v":[])", R"("ep":[[3,2,2,2,2,null,12.0,5.0]])");
        QTest::newRow("nine epochs")
            << with(R"("K":4,"s":1,"p":9,"c":0,"x":0,"su":[],"v":[])",
                    R"("ep":[[1,1,1,1,1,1,1,1],[2,1,1,1,1,1,1,1],[3,1,1,1,1,1,1,1],[4,1,1,1,1,1,1,1],[5,1,1,1,1,1,1,1],[6,1,1,1,1,1,1,1],[7,1,1,1,1,1,1,1],[8,1,1,1,1,1,1,1],[9,1,1,1,1,1,1,1]])");
        QTest::newRow("trainers beyond the epoch's peers")
            << with(R"("K":4,"s":1,"p":2,"c":0,"x":0,"su":[],"v":[])", R"("ep":[[3,1,2,0,0,1,1,1]])");
        QTest::newRow("missing field") << QString(R"({"K":4,"s":1,"p":2})");
        QTest::newRow("a monitor of another shard")
            << with(R"("K":4,"s":1,"p":2,"c":0,"x":0,"su":[],"v":[],"m":["00000002000000000000000000000000"])", epochs);
        QTest::newRow("valid with its monitor")
            << with(R"("K":4,"s":1,"p":2,"c":0,"x":0,"su":[],"v":[],"m":["00000005000000000000000000000000"])", epochs);
        QTest::newRow("not an object") << QString("[1,2]");
    }
    void malformedTalliesAreRefused()
    {
        QFETCH(QString, payload);
        const bool valid = QString(QTest::currentDataTag()).startsWith("valid");
        try {
            const auto t = parseTally(signedTally(payload.toStdString()));
            QVERIFY2(valid, "a malformed tally was taken");
            QCOMPARE(t.peers, 2);
            QCOMPARE(t.epochs.at(0).rate, 5.0);
        } catch (const ProtocolError &e) {
            QVERIFY2(!valid, e.what());
        }
    }

    // Per shard, among its own summarizers' tallies (signers in the shard, the three smallest
    // ids, the newest of each), the one of the median peer count (the lower of two, ties to the
    // smaller claim of samples); expired ones, this peer's own shard and other K left out.
    void theMedianTallyOfAShardIsChosen()
    {
        // Shard 1 of 4: ids 1, 5, 9, 13 (mod 4); shard 2: 2, 6.
        std::vector<ShardTally> read{tallyOf(idOf(1), 1, 10), tallyOf(idOf(5), 1, 1000), tallyOf(idOf(9), 1, 12),
                                     tallyOf(idOf(13), 1, 1),    // not among the three smallest
                                     tallyOf(idOf(3), 1, 11),    // signer of shard 3
                                     tallyOf(idOf(2), 2, 20), tallyOf(idOf(6), 2, 4000),
                                     tallyOf(idOf(7), 3, 30, 50.0), // expired at 80
                                     tallyOf(idOf(4), 0, 7)};       // this peer's shard
        read.push_back(tallyOf(idOf(1), 1, 100, 90.0)); // an older one of the same signer
        auto otherK = tallyOf(idOf(11), 3, 5);
        otherK.shardCount = 8;
        read.push_back(otherK);
        const auto chosen = chooseTallies(read, 4, 0, 100.0);
        QCOMPARE(chosen.size(), std::size_t{2});
        QCOMPARE(chosen[0].shard, 1);
        QCOMPARE(chosen[0].peers, 12);
        QCOMPARE(chosen[1].shard, 2);
        QCOMPARE(chosen[1].peers, 20);
        // Equal counts: the smaller claim of samples.
        auto a = tallyOf(idOf(1), 1, 10), b = tallyOf(idOf(5), 1, 10);
        a.epochs = {EpochCount{7, 10, 10, 10, 10, 100.0, 100.0, 10.0}};
        b.epochs = {EpochCount{7, 10, 10, 10, 10, 1e6, 1e6, 10.0}};
        const auto tie = chooseTallies({b, a}, 4, 0, 100.0);
        QCOMPARE(tie.at(0).epochs.at(0).samples, 100.0);
    }

    void summarizersAreTheSmallestIdsOfTheShard()
    {
        const auto ids = peerIds(200, 11);
        const auto records = swarm(ids, 3, 100.0);
        std::map<int, std::set<std::string>> byShard;
        for (const auto &id : ids)
            byShard[shardOf(id, 4)].insert(id);
        for (const auto &[shard, members] : byShard) {
            int summarizers = 0;
            for (const auto &id : members) {
                const bool mine = summarizes(id, records, 4, 100.0);
                summarizers += mine ? 1 : 0;
                QCOMPARE(mine, std::distance(members.begin(), members.find(id)) < SummarizersPerShard);
            }
            QCOMPARE(summarizers, SummarizersPerShard);
        }
    }

    // A peer reading its own shard and the other shards' tallies sees what a peer reading every
    // record sees: the global epoch, the samples and rate there, the ETA, the peers expected in
    // groups.
    void aShardedViewCountsAsTheWholeSwarm()
    {
        const auto ids = peerIds(256, 5);
        auto records = swarm(ids, 7, 100.0);
        // Besides the trainers: paused ones (no vote, not expected), auxiliaries that join groups
        // (expected, no vote), a monitor that does not average, one syncing trainer.
        for (std::size_t i = 1; i < records.size(); ++i) {
            auto &r = records[i];
            if (i % 16 == 0) {
                r.paused = true;
                r.samplesAccumulated = 0;
                r.samplesPerSecond = 0.0;
            } else if (i % 21 == 0) {
                r.role = PeerRole::Auxiliary;
                r.samplesAccumulated = 0;
                r.samplesPerSecond = 0.0;
            }
        }
        records[50].role = PeerRole::Monitor;
        records[50].averages = false;
        records[50].samplesAccumulated = 0;
        records[50].samplesPerSecond = 0.0;
        records[51].syncing = true;
        const double now = 101.5;
        auto o = test::trackerOptions(100000);
        o.selfId = ids[0];
        ProgressTracker whole(o);
        for (const auto &r : records)
            QVERIFY(whole.update(r, now));
        const auto all = whole.global(now, 7);
        QCOMPARE(all.globalEpoch, 7L);
        QCOMPARE(all.peers, 256);
        for (const int k : {2, 4, 8}) {
            auto sharded = shardedView(ids[0], records, k, now, 100000);
            const auto g = sharded.global(now, 7);
            QCOMPARE(g.globalEpoch, all.globalEpoch);
            QCOMPARE(g.peers, all.peers);
            QCOMPARE(g.reportedSamples, all.reportedSamples);
            QVERIFY(std::abs(g.samplesAccumulated - all.samplesAccumulated) < 1e-6 * all.samplesAccumulated);
            QVERIFY(std::abs(g.samplesPerSecond - all.samplesPerSecond) < 1e-9 * all.samplesPerSecond);
            QVERIFY(std::abs(g.eta - all.eta) < 1e-6 * all.eta);
            QCOMPARE(sharded.expectedPeers(ids[0], 7, 3, 60.0, now).size() + sharded.expectedElsewhere(7, 3, now),
                     whole.expectedPeers(ids[0], 7, 3, 60.0, now).size());
            // A trainer one epoch behind resyncs in both views.
            QCOMPARE(sharded.decide(6, now), StepDecision::Resync);
        }
        // The swarm one epoch on, seen through the tallies alone: this peer's shard is still at 7.
        auto ahead = swarm(ids, 8, 100.0);
        for (auto &r : ahead)
            if (shardOf(r.peerId, 4) == shardOf(ids[0], 4))
                r.epoch = 7;
        QCOMPARE(shardedView(ids[0], ahead, 4, now, 100000).global(now, 7).globalEpoch, 8L);
    }

    // A lying tally claims its shard is far ahead, or has computed far more than it can: its
    // epoch has no support beside its own and counts for nothing; its samples count like its
    // peers' records would, at most the cap since the epoch began each.
    void aLyingTallyMovesNeitherTheEpochNorTheBatch()
    {
        const auto ids = peerIds(192, 9);
        auto o = test::trackerOptions(100000);
        o.selfId = ids[0];
        // The swarm enters epoch 7 at t = 10 (epoch 6 read from t = 0), so the allowance is known.
        auto t = shardedView(ids[0], swarm(ids, 6, 0.0), 4, 0.0, 100000);
        QCOMPARE(t.global(0.0, 6).globalEpoch, 6L);
        auto records = swarm(ids, 7, 10.0);
        for (auto &r : records)
            r.epoch = 7;
        for (const auto &r : inShard(records, 4, shardOf(ids[0], 4)))
            t.update(r, 10.0);
        std::vector<ShardTally> honest;
        for (int s = 0; s < 4; ++s)
            if (s != shardOf(ids[0], 4)) {
                honest.push_back(tallyShard(records, 4, s, 10.0));
                honest.back().expiresAt = 60.0;
            }
        t.setShardTallies(honest);
        const auto before = t.global(10.0, 7);
        QCOMPARE(before.globalEpoch, 7L);

        auto liar = honest;
        ShardTally &lie = liar.back();
        lie.peers = 128;
        lie.support = {{1000000000L, 128}};
        lie.votes = {{1000000000L, 128}};
        EpochCount far;
        far.epoch = 1000000000L;
        far.peers = far.trainers = far.donors = far.averaging = 128;
        lie.epochs = {far};
        t.setShardTallies(liar);
        QCOMPARE(t.global(11.0, 7).globalEpoch, 7L);
        QCOMPARE(t.decide(7, 11.0), StepDecision::Accumulate);

        EpochCount heavy;
        heavy.epoch = 7;
        heavy.peers = heavy.trainers = heavy.donors = 128;
        heavy.reported = heavy.samples = 1e9;
        heavy.rate = 1e9;
        lie.support = lie.votes = {{7L, 128}};
        lie.epochs = {heavy};
        t.setShardTallies(liar);
        const auto g = t.global(11.0, 7);
        const auto honestAt11 = [&] {
            auto h = t;
            h.setShardTallies(honest);
            return h.global(11.0, 7);
        }();
        // The cap is 8 x the median rate (about 20 samples/s) a peer; the epoch began 1 s ago,
        // and the slack is 1 s: at most 128 x 160 x 2 samples more than without the lie.
        const double most = 128.0 * 8.0 * 22.0 * 2.0;
        QVERIFY2(g.samplesAccumulated - honestAt11.samplesAccumulated <= most,
                 qPrintable(QString::number(g.samplesAccumulated - honestAt11.samplesAccumulated)));
        QVERIFY(g.samplesAccumulated < 100000.0);
        QVERIFY(g.samplesPerSecond - honestAt11.samplesPerSecond <= 128.0 * 8.0 * 22.0);
    }
};

QTEST_APPLESS_MAIN(TestProgressShards)
#include "tst_progressshards.moc"
