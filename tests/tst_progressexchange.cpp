// A peer's turn of progress records in shards (core/averaging/ProgressExchange.h): the split
// when the swarm passes the capacity, counting the whole swarm meanwhile, the summarizer's tally,
// a joiner finding the shards, and tallies or records that claim a swarm nobody sees.
#include "ProgressRecords.h"
#include "ShardedSwarm.h"
#include "averaging/ProgressExchange.h"
#include "averaging/ProgressShards.h"

#include <QtTest>

using namespace dedloc;
using namespace dedloc::test;

namespace {

// The tracker options of peer `self` (a target far beyond the swarm's samples: no step).
TrackerOptions options(const std::string &self)
{
    auto o = trackerOptions(100000);
    o.selfId = self;
    return o;
}

} // namespace

class TestProgressExchange final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // A peer whose estimate passes capacity x K splits at once, keeps only its new shard's
    // records, and still counts the whole swarm from the records of the other shards it read
    // (nobody has published tallies yet); when it summarizes its shard, it hands back the tally.
    void anExchangeSplitsAndStillCountsTheWholeSwarm()
    {
        const auto ids = peerIds(40, 21);
        const auto records = swarm(ids, 4, 100.0);
        auto o = options(ids[0]);
        ProgressTracker t(o);
        ProgressExchange exchange("run", ids[0], 8);
        QCOMPARE(exchange.shardCount(), 1);
        QVERIFY(!exchange.ingest(records, {}, t, 100.5));
        QCOMPARE(exchange.estimatedPeers(), 40);
        QCOMPARE(exchange.shardCount(), 8); // 32 < 40 <= 64
        for (const auto &r : t.liveRecords(100.5))
            QCOMPARE(shardOf(r.peerId, 8), shardOf(ids[0], 8));
        const auto tally = exchange.ingest(records, {}, t, 101.0);
        QCOMPARE(t.global(101.0, 4).peers, 40);
        QCOMPARE(exchange.shardCount(), 8);
        QCOMPARE(tally.has_value(), summarizes(ids[0], records, 8, 101.0));
        // A summarizer of the shard hands back its tally.
        for (const auto &id : ids) {
            if (!summarizes(id, records, 8, 101.0))
                continue;
            o.selfId = id;
            ProgressTracker other(o);
            ProgressExchange e("run", id, 8);
            (void)e.ingest(records, {}, other, 100.5);
            const auto mine = e.ingest(records, {}, other, 101.0);
            QVERIFY(mine.has_value());
            QCOMPARE(mine->shard, shardOf(id, 8));
            QCOMPARE(mine->peers, static_cast<int>(other.liveRecords(101.0).size()));
            break;
        }
        // A joiner, at one shard, reads the records that shard 0's summarizers also publish in
        // the one-shard key, then their K's tallies, and takes that K at once; a record claiming
        // 1 024 shards without tallies to show for them moves it nowhere.
        std::vector<ProgressRecord> pointers;
        for (const auto &r : records)
            if (shardOf(r.peerId, 8) == 0 && pointers.size() < 3) {
                pointers.push_back(r);
                pointers.back().shardCount = 8;
            }
        QCOMPARE(pointers.size(), std::size_t{3});
        std::vector<SignedRecord> tallies8;
        for (int s = 0; s < 8; ++s)
            tallies8.push_back(signedTally(encodeTally(tallyShard(records, 8, s, 100.0)), idOf(static_cast<unsigned>(s)), 100.0));
        ProgressTracker joinerView(o);
        ProgressExchange joiner("run", "ffffffff" + std::string(24, '0'), 8);
        (void)joiner.ingest(pointers, tallies8, joinerView, 100.5);
        QCOMPARE(joiner.estimatedPeers(), 40);
        QCOMPARE(joiner.shardCount(), 8);
        ProgressTracker liarView(o);
        ProgressExchange misled("run", "ffffffff" + std::string(24, '0'), 8);
        auto claim = pointers;
        for (auto &r : claim)
            r.shardCount = 1024;
        (void)misled.ingest(claim, {}, liarView, 100.5);
        QCOMPARE(misled.shardCount(), 1);
        QCOMPARE(shardCountOf(encodeProgress(claim[0])), 1024);
        // Nor with a few forged tallies of that K: half its shards must show one.
        std::vector<SignedRecord> forged;
        for (unsigned s = 0; s < 3; ++s) {
            auto f = tallyShard(records, 1024, static_cast<int>(s), 100.0);
            f.peers = 8;
            forged.push_back(signedTally(encodeTally(f), idOf(s), 100.0));
        }
        ProgressTracker forgedView(o);
        ProgressExchange notMisled("run", "ffffffff" + std::string(24, '0'), 8);
        (void)notMisled.ingest(claim, forged, forgedView, 100.5);
        QCOMPARE(notMisled.shardCount(), 1);
        QCOMPARE(shardCountOf(R"({"e":1,"h":3})"), 1);
        QCOMPARE(shardCountOf("not json"), 1);
        // A tally counting more than twice the capacity in one shard is refused.
        auto huge = tallyShard(records, 8, (shardOf(ids[0], 8) + 1) % 8, 101.0);
        huge.peers = 17;
        huge.epochs.clear();
        huge.support.clear();
        huge.votes.clear();
        auto signedHuge = signedTally(encodeTally(huge), idOf(static_cast<unsigned>(huge.shard)), 101.0);
        (void)exchange.ingest(records, {signedHuge}, t, 101.5);
        QCOMPARE(t.global(101.5, 4).peers, 40);
    }

    // A peer that grows K (4 to 8 here) reads its new shard, its old shard's key and the tallies:
    // the others, still at 4, publish their tallies there alone for a moment. Meanwhile the swarm
    // counts whole: at the change (the other shards as tallied at 4, the half of its old shard it
    // lets go as a tally of its own), then from the tallies at 4 of the shards not moved, and
    // once a shard moved, from its tallies at 8 alone (not twice).
    void aGrowingPeerCountsTheShardsNotMovedYet()
    {
        const auto ids = peerIds(40, 21);
        const auto records = swarm(ids, 4, 100.0);
        auto o = options(ids[0]);
        ProgressTracker t(o);
        ProgressExchange exchange("run", ids[0], 8);
        (void)exchange.ingest({records.begin(), records.begin() + 24}, {}, t, 100.5);
        QCOMPARE(exchange.shardCount(), 4); // 16 < 24 <= 32
        const int own4 = shardOf(ids[0], 4);
        const auto mine4 = inShard(records, 4, own4);
        const auto tallies4 = talliesOfOthers(records, 4, own4, 100.0);
        (void)exchange.ingest(mine4, tallies4, t, 101.0);
        QCOMPARE(exchange.shardCount(), 8); // 40 > 32
        QCOMPARE(t.global(101.0, 4).peers, 40);
        (void)exchange.ingest(mine4, tallies4, t, 102.0);
        QCOMPARE(t.global(102.0, 4).peers, 40);
        // The peers of one other shard at 4 moved: its two parts at 8 publish tallies.
        const unsigned moved = static_cast<unsigned>((own4 + 1) % 4);
        auto tallies = tallies4;
        for (unsigned s = moved; s < 8; s += 4)
            tallies.push_back(signedTally(encodeTally(tallyShard(records, 8, static_cast<int>(s), 101.5)), idOf(s), 101.5));
        (void)exchange.ingest(mine4, tallies, t, 103.0);
        QCOMPARE(t.global(103.0, 4).peers, 40);

        // From 2 shards to 8 at once: a shard at 2 holds four times a shard's peers at 8, and its
        // tally is not refused as a lie about its size.
        ProgressTracker t2(o);
        ProgressExchange leap("run", ids[0], 8);
        (void)leap.ingest({records.begin(), records.begin() + 12}, {}, t2, 100.5);
        QCOMPARE(leap.shardCount(), 2);
        const int own2 = shardOf(ids[0], 2);
        const auto mine2 = inShard(records, 2, own2);
        const auto tallies2 = talliesOfOthers(records, 2, own2, 100.0);
        (void)leap.ingest(mine2, tallies2, t2, 101.0);
        QCOMPARE(leap.shardCount(), 8);
        (void)leap.ingest(mine2, tallies2, t2, 102.0);
        QCOMPARE(t2.global(102.0, 4).peers, 40);
    }

    // A shard's tally stays counted through a read that missed it (a fetch answered in part),
    // until it expires; not when its signer is refused (banned) meanwhile.
    void aTallyMissedByAReadIsKeptUntilItExpires()
    {
        const auto ids = peerIds(40, 21);
        const auto records = swarm(ids, 4, 100.0);
        auto o = options(ids[0]);
        ProgressTracker t(o);
        ProgressExchange exchange("run", ids[0], 8);
        (void)exchange.ingest(records, {}, t, 100.5);
        QCOMPARE(exchange.shardCount(), 8);
        const int own = shardOf(ids[0], 8);
        const auto mine = inShard(records, 8, own);
        const auto tallies = talliesOfOthers(records, 8, own, 100.0); // live until 130
        (void)exchange.ingest(mine, tallies, t, 101.0);
        QCOMPARE(t.global(101.0, 4).peers, 40);
        (void)exchange.ingest(mine, {}, t, 102.0);
        QCOMPARE(t.global(102.0, 4).peers, 40);
        (void)exchange.ingest(mine, tallies, t, 103.0);
        QCOMPARE(t.global(103.0, 4).peers, 40);
        (void)exchange.ingest(mine, {}, t, 104.0, [](const std::string &) { return true; });
        QCOMPARE(t.global(104.0, 4).peers, static_cast<int>(mine.size()));
        (void)exchange.ingest(mine, tallies, t, 105.0);
        QCOMPARE(t.global(105.0, 4).peers, 40);
        (void)exchange.ingest(mine, {}, t, 131.0);
        QCOMPARE(t.global(131.0, 4).peers, static_cast<int>(mine.size()));
    }
};

QTEST_APPLESS_MAIN(TestProgressExchange)
#include "tst_progressexchange.moc"
