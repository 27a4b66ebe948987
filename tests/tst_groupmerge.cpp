// Merging the groups of one epoch (core/averaging/GroupMerge.h): the records and their majority
// view, the weighted mean, and peers in threads (own OpenDHT node and service socket each, on
// loopback) that averaged in two groups and must all end with one identical average. Sealing:
// tst_groupseal.
#include "averaging/GroupMerge.h"
#include "averaging/PeerService.h"
#include "compress/Compression.h"
#include "net/PeerIdentity.h"
#include "net/WireMessage.h"
#include "util/Clock.h"
#include "util/Error.h"

#include "MergeFixtures.h"
#include "SwarmHarness.h"

#include <QTest>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <thread>

using namespace dedloc;
using namespace dedloc::test;

namespace {

const std::string &Run = test::MergeRun;
constexpr long Epoch = test::MergeEpoch;
constexpr std::size_t Elements = test::MergeElements;

} // namespace

class TestGroupMerge final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void recordRoundTripsAndBadOnesAreRefused()
    {
        const auto id = PeerIdentity::generate();
        DhtNode dht(id);
        const auto digest = std::string(64, 'a');
        const auto bytes = dht.encodeRecord("k", encodeGroupRecord(record("x", "e5-01", 40, 3, digest)), 1, 100.0, 1e12);
        const auto signed_ = verifySignedRecord(
            "k", std::span(reinterpret_cast<const std::uint8_t *>(bytes.data()), bytes.size()), 100.0, 3.0);
        QVERIFY(signed_.has_value());
        const auto r = parseGroupRecord(*signed_);
        QCOMPARE(r.peerId, id.peerId()); // the signer, not the payload
        QCOMPARE(r.groupId, std::string("e5-01"));
        QCOMPARE(r.weight, 40L);
        QCOMPARE(r.members, std::size_t{3});
        QCOMPARE(r.digest, digest);
        const auto refused = [&](const std::string &payload) {
            auto s = *signed_;
            s.payload = payload;
            try {
                (void)parseGroupRecord(s);
            } catch (const ProtocolError &) {
                return true;
            }
            return false;
        };
        const auto payload = [&](const char *field, const nlohmann::json &value) {
            nlohmann::json j = {{"e", 5}, {"g", "e5"}, {"w", 4}, {"n", 2}, {"h", digest}, {"a", ""}};
            j[field] = value;
            return j.dump();
        };
        QVERIFY(!refused(payload("w", 4)));
        QVERIFY(refused(payload("n", 1)));     // a group of one
        QVERIFY(refused(payload("h", "00"))); // a short digest
        QVERIFY(refused(payload("g", "")));   // no group id
        QVERIFY(refused(payload("w", -4)));   // a negative weight
        QVERIFY(refused(payload("a", "http://x")));
        QVERIFY(refused(payload("h", std::string(64, 'G'))));
        // A seal: the groups its signer proposes every peer merges.
        auto sealed = record("x", "e5-01", 40, 3, digest);
        sealed.seal = {{"e5-01", 40, digest}, {"e5-02", 7, std::string(64, 'b')}};
        auto withSeal = *signed_;
        withSeal.payload = encodeGroupRecord(sealed);
        QVERIFY(parseGroupRecord(withSeal).seal == sealed.seal);
        QVERIFY(parseGroupRecord(*signed_).seal.empty());
        QVERIFY(!refused(payload("s", nlohmann::json::array({nlohmann::json::array({"e5", 4, digest})}))));
        QVERIFY(refused(payload("s", nlohmann::json::array())));                                    // empty
        QVERIFY(refused(payload("s", nlohmann::json::array({nlohmann::json::array({"e5", 4})})))); // no digest
        QVERIFY(refused(payload("s", nlohmann::json::array({nlohmann::json::array({"e5", -4, digest})}))));
        QVERIFY(refused(payload("s", nlohmann::json::array({nlohmann::json::array({"e5", 4, "00"})}))));
        QVERIFY(refused(payload("s", nlohmann::json::array({nlohmann::json::array({"e5", 4, digest}),
                                                            nlohmann::json::array({"e5", 5, digest})})))); // twice
        nlohmann::json tooMany = nlohmann::json::array();
        for (std::size_t i = 0; i <= MaxSealGroups; ++i)
            tooMany.push_back(nlohmann::json::array({"e5-" + std::to_string(i), 1, digest}));
        QVERIFY(refused(payload("s", tooMany)));
        // The end of a round without an average: no digest, no seal.
        auto ended = record("x", "e5-01", 0, 3, "");
        ended.ended = true;
        withSeal.payload = encodeGroupRecord(ended);
        QVERIFY(parseGroupRecord(withSeal).ended);
        QVERIFY(!parseGroupRecord(*signed_).ended);
        QVERIFY(refused(payload("x", true))); // and a digest
        QVERIFY(refused(payload("x", 1)));
    }

    // Each group is what most of its records claim; a group claimed by one record, or heavier
    // than the bound per member, is left out; the views come in the order of group ids.
    void viewsTakeTheMajorityClaim()
    {
        const auto h1 = std::string(64, '1'), h2 = std::string(64, '2');
        const std::vector<GroupRecord> records = {
            record("p1", "e5-b", 10, 3, h1), record("p2", "e5-b", 10, 3, h1, ""), record("p3", "e5-b", 99, 3, h2),
            record("p4", "e5-a", 8, 2, h2),  record("p5", "e5-c", 1000, 2, h1),   record("p6", "e5-c", 1000, 2, h1),
            record("p7", "e5-d", 6, 2, h2),  record("p8", "e5-d", 6, 2, h2),
        };
        auto views = groupViews(records, Epoch, 100.0);
        QCOMPARE(views.size(), std::size_t{2}); // e5-a: one record; e5-c: too heavy
        QCOMPARE(views[0].groupId, std::string("e5-b"));
        QVERIFY(!views[0].forming);
        QCOMPARE(views[0].weight, 10L);
        QCOMPARE(views[0].digest, h1);
        QCOMPARE(views[0].agreeing, std::size_t{2});
        QCOMPARE(views[0].servers.size(), std::size_t{1}); // p2 serves nothing (client mode)
        QCOMPARE(views[0].servers[0].peerId, std::string("p1"));
        QCOMPARE(views[1].groupId, std::string("e5-d"));
        QVERIFY(groupViews(records, Epoch + 1, 100.0).empty());
        // A group whose round ended for one member and not yet for the other is still forming.
        views = groupViews({record("p1", "e5-f", 10, 2, h1), record("p2", "e5-f", 0, 2, "")}, Epoch, 100.0);
        QCOMPARE(views.size(), std::size_t{1});
        QVERIFY(views[0].forming);
        // A group of 4 whose round ended without an average for 1 or 2 members: still forming (two
        // may still agree); for 3: left out (one is left), unless one claims an average; two that
        // agree on an average make it complete whatever the others say. A group of 2: one end.
        const auto end = [](const char *peer, std::size_t members = 4) {
            auto r = record(peer, members == 4 ? "e5-g" : "e5-h", 0, members, "");
            r.ended = true;
            return r;
        };
        const auto claim = [&](const char *peer) { return record(peer, "e5-g", 10, 4, h1); };
        QVERIFY(groupViews({end("p1"), record("p2", "e5-g", 0, 4, "")}, Epoch, 100.0).at(0).forming);
        QVERIFY(groupViews({end("p1"), end("p2")}, Epoch, 100.0).at(0).forming);
        QVERIFY(groupViews({end("p1"), end("p2"), end("p3")}, Epoch, 100.0).empty());
        QVERIFY(groupViews({end("p1"), end("p2"), end("p3"), claim("p4")}, Epoch, 100.0).at(0).forming);
        views = groupViews({end("p1"), end("p2"), claim("p3"), claim("p4")}, Epoch, 100.0);
        QVERIFY(views.size() == 1 && !views[0].forming && views[0].digest == h1);
        QVERIFY(groupViews({end("p1", 2), record("p2", "e5-h", 0, 2, "")}, Epoch, 100.0).empty());
    }

    void mergeIsTheWeightedMean()
    {
        const std::vector<float> a = {1.0F, -2.0F, 0.1F}, b = {3.0F, 2.0F, 0.7F};
        const auto m = mergeAverages({a, b}, {10, 30});
        for (std::size_t i = 0; i < a.size(); ++i)
            QCOMPARE(m[i], static_cast<float>(0.25 * double(a[i]) + 0.75 * double(b[i])));
        QCOMPARE(m[1], 1.0F);
        QVERIFY_THROWS_EXCEPTION(Error, (void)mergeAverages({a, {1.0F}}, {1, 1}));
        QVERIFY_THROWS_EXCEPTION(Error, (void)mergeAverages({a}, {1, 2}));
    }

    // Four peers averaged in two groups of two: each fetches the other group's average and all
    // four hold the same merged average, bit for bit, weighted by the groups' samples.
    void twoGroupsMergeIntoOneAverage()
    {
        auto peers = makePeers(4);
        const auto a = fp16Update(ramp(1.0F, 0.5F), 10), b = fp16Update(ramp(-3.0F, 0.25F), 30);
        const GroupInfo ga = groupOf("e5-aaaa", peers, 0), gb = groupOf("e5-bbbb", peers, 2);
        std::atomic<bool> stop{false};
        auto results = mergeAtOnce(peers, 4, ga, a, gb, b, 4, stop);
        const auto expected = mergeAverages({decodeUpdate(*a), decodeUpdate(*b)}, {10, 30});
        for (auto &f : results) {
            const auto r = f.get();
            QVERIFY2(r.note.empty(), r.note.c_str());
            QCOMPARE(r.groups, std::size_t{2});
            QCOMPARE(r.weight, 40L);
            QCOMPARE(r.peers, std::size_t{4});
            QVERIFY(r.average == expected);
        }
        // Not the mean of the two groups with equal weights: the samples weigh.
        QVERIFY(std::abs(expected[0] - (0.25F * decodeUpdate(*a)[0] + 0.75F * decodeUpdate(*b)[0])) < 1e-6F);
    }

    // A member that serves another average than its group's records claim is passed over: the
    // honest member of that group serves the claimed one, and everyone merges that.
    void aForgedAverageIsNotMerged()
    {
        auto peers = makePeers(4);
        const auto a = fp16Update(ramp(1.0F, 0.0F), 20), b = fp16Update(ramp(2.0F, 1.0F), 20);
        const GroupInfo ga = groupOf("e5-aaaa", peers, 0), gb = groupOf("e5-bbbb", peers, 2);
        // Peer 3 claims group B's true average but serves a forged one.
        peers[3]->service->addGroupUpdate(gb.groupId, fp16Update(ramp(50.0F, 9.0F), 20));
        const auto key = groupsKey(Run, Epoch);
        QVERIFY(peers[3]->dht->publish(key,
                                       encodeGroupRecord(record("", gb.groupId, 20, 2, updateDigest(*b),
                                                                peers[3]->service->endpoint())),
                                       60.0));
        std::atomic<bool> stop{false};
        auto results = mergeAtOnce(peers, 3, ga, a, gb, b, 4, stop);
        const auto expected = mergeAverages({decodeUpdate(*a), decodeUpdate(*b)}, {20, 20});
        for (auto &f : results) {
            const auto r = f.get();
            QCOMPARE(r.groups, std::size_t{2});
            QVERIFY(r.average == expected);
        }
    }

    // A group that was announced but whose average never came is waited for, then left out.
    void anAnnouncedGroupIsWaitedForThenLeftOut()
    {
        auto peers = makePeers(4);
        const auto a = fp16Update(ramp(1.0F, 0.0F), 20);
        const GroupInfo ga = groupOf("e5-aaaa", peers, 0), gb = groupOf("e5-bbbb", peers, 2);
        peers[2]->merger->announce(gb);
        peers[3]->merger->announce(gb);
        // Both announcements readable first (a loaded machine's DHT puts take a while).
        QVERIFY(test::SwarmHarness::waitFor([&] { return peers[0]->merger->groupsStillRunning(Epoch); }, 10.0));
        std::atomic<bool> stop{false};
        const auto started = std::chrono::steady_clock::now();
        // Two peers expected: group A alone would hold them; the announcement makes it wait.
        const auto r = peers[0]->merger->merge(ga, a, [] { return std::size_t{2}; }, 0.1, stop);
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QCOMPARE(r.groups, std::size_t{1});
        QVERIFY2(r.note.find("e5-bbbb not merged: its round did not end in time") != std::string::npos, r.note.c_str());
        QVERIFY2(waited >= 2.9, qPrintable(QString::number(waited))); // MergeOptions::formingWait
        const auto views = groupViews({record("x", "e5-c", 0, 3, ""), record("y", "e5-c", 0, 3, ""),
                                       record("z", "e5-d", 0, 3, "")}, Epoch, 100.0);
        QCOMPARE(views.size(), std::size_t{1}); // e5-d: one announcement is no group
        QCOMPARE(views[0].groupId, std::string("e5-c"));
        QVERIFY(views[0].forming);
        QCOMPARE(views[0].members, std::size_t{3});
    }

    // A peer whose search found no group takes the merge the two groups apply, bit for bit,
    // without a round of its own (its own samples are not in it).
    void aPeerWithoutAGroupTakesTheEpochsMerge()
    {
        auto peers = makePeers(5);
        const auto a = fp16Update(ramp(1.0F, 0.5F), 10), b = fp16Update(ramp(-3.0F, 0.25F), 30);
        const GroupInfo ga = groupOf("e5-aaaa", peers, 0), gb = groupOf("e5-bbbb", peers, 2);
        std::atomic<bool> stop{false};
        const auto five = [] { return std::size_t{5}; };
        auto results = mergeAtOnce(peers, 4, ga, a, gb, b, 5, stop);
        auto lone = std::async(std::launch::async, [&] { return peers[4]->merger->adopt(Epoch, Elements, five, stop); });
        const auto expected = mergeAverages({decodeUpdate(*a), decodeUpdate(*b)}, {10, 30});
        for (auto &f : results)
            QVERIFY(f.get().average == expected);
        const auto r = lone.get();
        QVERIFY2(r.sealed && !r.ownMerged, r.note.c_str());
        QCOMPARE(r.groups, std::size_t{2});
        QCOMPARE(r.weight, 40L);
        QCOMPARE(r.peers, std::size_t{4});
        QVERIFY(r.average == expected);
        // Nobody else at its epoch: nothing to take.
        const auto none = peers[4]->merger->adopt(Epoch + 1, Elements, [] { return std::size_t{1}; }, stop);
        QVERIFY(none.average.empty());
        QCOMPARE(none.groups, std::size_t{0});
    }

    // A member whose round lost a part takes the epoch's merge (adopt, with its round's group):
    // its own group, announced and never complete, is not another group to wait for (the wait for
    // a forming group is 30 s here). Where its group held every peer expected one read ends it;
    // where a third peer is expected it waits as a peer without a group, and finds nothing.
    void aMemberOfAnIncompleteRoundDoesNotWaitForItsOwnGroup()
    {
        auto peers = makePeers(2);
        const GroupInfo g = groupOf("e5-aaaa", peers, 0);
        peers[0]->merger->announce(g);
        peers[1]->merger->announce(g);
        MergeOptions options;
        options.maxGroupWeight = 100.0;
        options.formingWait = 30.0;
        options.targetGroupSize = 2;
        GroupMerger patient(*peers[0]->dht, peers[0]->service.get(), MergeSelf{peers[0]->identity.peerId(), Run},
                            options);
        std::atomic<bool> stop{false};
        QVERIFY(test::SwarmHarness::waitFor([&] { return patient.groupsStillRunning(Epoch); }, 10.0));
        const auto whole = patient.adopt(Epoch, Elements, [] { return std::size_t{2}; }, stop, g);
        QVERIFY(whole.average.empty());
        // Its own end record (published as the adopt starts) may already leave the group out.
        QVERIFY2(whole.groups == 0
                     && (whole.note.find("e5-aaaa") == std::string::npos
                         || whole.note.find("e5-aaaa not merged") != std::string::npos),
                 whole.note.c_str());
        const auto started = std::chrono::steady_clock::now();
        const auto r = patient.adopt(Epoch, Elements, [] { return std::size_t{3}; }, stop, g);
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QVERIFY(r.average.empty());
        QCOMPARE(r.groups, std::size_t{0});
        // Its own end record (the first adopt's) leaves the group out; where that has not landed
        // yet, the group shows as forming and is not merged.
        QVERIFY2(r.note.find("e5-aaaa") == std::string::npos
                     || r.note.find("e5-aaaa not merged: its round did not end in time") != std::string::npos,
                 r.note.c_str());
        QVERIFY2(waited < 20.0, qPrintable(QString::number(waited)));
    }

    // The members of a round that ended without an average say so: a peer of the epoch no longer
    // sees the group as running (a restarted peer waited up to the records' 120 s for it) and
    // takes the epoch's step without waiting for it.
    void anIncompleteRoundsEndIsNotWaitedFor()
    {
        auto peers = makePeers(3);
        const GroupInfo g = groupOf("e5-aaaa", peers, 0);
        peers[0]->merger->announce(g);
        peers[1]->merger->announce(g);
        QVERIFY(test::SwarmHarness::waitFor([&] { return peers[2]->merger->groupsStillRunning(Epoch); }, 10.0));
        std::atomic<bool> stop{false};
        for (std::size_t i : {0, 1})
            QVERIFY(peers[i]->merger->adopt(Epoch, Elements, [] { return std::size_t{2}; }, stop, g).average.empty());
        QVERIFY(test::SwarmHarness::waitFor([&] { return !peers[2]->merger->groupsStillRunning(Epoch); }, 10.0));
        const auto started = std::chrono::steady_clock::now();
        const auto r = peers[2]->merger->adopt(Epoch, Elements, [] { return std::size_t{2}; }, stop);
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QVERIFY(r.average.empty() && r.groups == 0);
        QVERIFY2(waited < 2.5, qPrintable(QString::number(waited))); // a forming group: 3 s (makePeers)
    }

    // A member of an incomplete round whose group held every peer it expected (a count that is
    // low where records arrive late) takes another group's merge that the records show: A
    // (peers 0 and 1) completed alone, and B's member expects 2 peers.
    void anIncompleteRoundThatSeemedToHoldEveryPeerTakesAnotherGroupsMerge()
    {
        auto peers = makePeers(4);
        const auto a = fp16Update(ramp(1.0F, 0.5F), 10);
        const GroupInfo ga = groupOf("e5-aaaa", peers, 0), gb = groupOf("e5-bbbb", peers, 2);
        std::atomic<bool> stop{false};
        for (auto &f : mergeAtOnce(peers, 2, ga, a, ga, a, 2, stop))
            QVERIFY(f.get().average.empty()); // A alone: its own average
        const auto key = groupsKey(Run, Epoch);
        QVERIFY(test::SwarmHarness::waitFor([&] { return peers[2]->dht->fetch(key, 1.0).size() >= 2; }, 10.0));
        const auto r = peers[2]->merger->adopt(
            Epoch, Elements, [] { return std::size_t{2}; }, stop, gb);
        QVERIFY2(r.average == decodeUpdate(*a), r.note.c_str());
        QVERIFY(r.groups == 1 && r.weight == 10 && !r.ownMerged);
    }

    // A peer without a round waits for an announced group as long as its own recent rounds took
    // (8 s here), not only formingWait (3 s): a round ending 4.5 s into its wait is taken.
    void aPeerWithoutARoundWaitsForAFormingGroupAsLongAsItsRoundsTake()
    {
        auto peers = makePeers(3);
        const auto a = fp16Update(ramp(1.0F, 0.5F), 10);
        const GroupInfo ga = groupOf("e5-aaaa", peers, 0);
        peers[0]->merger->announce(ga);
        peers[1]->merger->announce(ga);
        QVERIFY(test::SwarmHarness::waitFor([&] { return peers[2]->merger->groupsStillRunning(Epoch); }, 10.0));
        std::atomic<bool> stop{false};
        auto waiting = std::async(std::launch::async, [&] {
            return peers[2]->merger->adopt(
                Epoch, Elements, [] { return std::size_t{2}; }, stop, {}, 8.0);
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(4500));
        for (auto &f : mergeAtOnce(peers, 2, ga, a, ga, a, 2, stop))
            QVERIFY(f.get().average.empty());
        const auto r = waiting.get();
        QVERIFY2(r.average == decodeUpdate(*a) && r.groups == 1 && r.weight == 10, r.note.c_str());
    }

    // A group that holds every expected peer merges nothing and waits for nothing.
    void aGroupOfTheWholeSwarmMergesNothing()
    {
        auto peers = makePeers(2);
        const auto a = fp16Update(ramp(1.0F, 0.0F), 20);
        std::atomic<bool> stop{false};
        const auto r = peers[0]->merger->merge(groupOf("e5-aaaa", peers, 0), a, [] { return std::size_t{2}; }, 0.1, stop);
        QCOMPARE(r.groups, std::size_t{1});
        QVERIFY(r.average.empty());
        QCOMPARE(r.weight, 20L);
    }
};

QTEST_GUILESS_MAIN(TestGroupMerge)
#include "tst_groupmerge.moc"
