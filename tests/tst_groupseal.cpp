// Agreeing on the groups one epoch merges (core/averaging/GroupSeal.h, GroupMerge.h "Sealing the
// merge"; docs/PROTOCOL.md "Merging groups", step 5): peers in threads (own OpenDHT node and
// service socket each, on loopback) whose groups end at different moments, whose DHT reads miss
// the seal, or that find a forged seal, and must all merge one set of groups.
#include "averaging/GroupMerge.h"
#include "averaging/GroupSeal.h"
#include "averaging/PeerService.h"
#include "util/Clock.h"

#include "MergeFixtures.h"
#include "SwarmHarness.h"

#include <QTest>

#include <nlohmann/json.hpp>

#include <atomic>
#include <future>
#include <memory>

using namespace dedloc;
using namespace dedloc::test;

namespace {

const std::string &Run = MergeRun;
constexpr long Epoch = MergeEpoch;
constexpr std::size_t Elements = MergeElements;

} // namespace

class TestGroupSeal final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // The record book keeps each member's most informed record of the epoch it reads for: a
    // seal of epoch 5 + EpochKeyRing under the same key (a ring of epochs) is skipped, not taken
    // over the member's announcement of epoch 5; a later average replaces that announcement.
    void theBookKeepsItsEpochsMostInformedRecords()
    {
        QCOMPARE(groupsKey(Run, Epoch), groupsKey(Run, Epoch + EpochKeyRing));
        RecordBook book;
        auto announced = record("p1", "e5-a", 0, 2, "");
        auto later = record("p1", "e1029-a", 10, 2, std::string(64, '1'));
        later.epoch = Epoch + EpochKeyRing;
        later.seal = {{"e1029-a", 10, later.digest}};
        auto all = absorb(book, {announced, later}, Epoch);
        QVERIFY(all.size() == 1 && all[0].epoch == Epoch && all[0].digest.empty());
        all = absorb(book, {record("p1", "e5-a", 10, 2, std::string(64, '2'))}, Epoch);
        QVERIFY(all.size() == 1 && all[0].digest == std::string(64, '2'));
        all = absorb(book, {announced}, Epoch); // an older copy takes nothing back
        QCOMPARE(all.at(0).digest, std::string(64, '2'));
    }

    // Group B's round ends after group A sealed the epoch's merge without it: B's members take
    // A's average, not their own, so all four hold one model (B's batch is lost to this step).
    // Also where one group could hold all four (matchmaking views split them, B formed late):
    // A's members, seeing two of the four peers they expect, wait and seal all the same. (Merging
    // A without a seal, A would hold A's average and B the merge of both.)
    void aGroupLateForTheSealTakesTheSealedMerge_data()
    {
        QTest::addColumn<int>("targetGroupSize");
        QTest::newRow("a swarm larger than one group") << 2;
        QTest::newRow("a swarm one group could hold") << 16;
    }

    void aGroupLateForTheSealTakesTheSealedMerge()
    {
        QFETCH(int, targetGroupSize);
        auto peers = makePeers(4, static_cast<std::size_t>(targetGroupSize));
        const auto a = fp16Update(ramp(1.0F, 0.5F), 10), b = fp16Update(ramp(-3.0F, 0.25F), 30);
        const GroupInfo ga = groupOf("e5-aaaa", peers, 0), gb = groupOf("e5-bbbb", peers, 2);
        std::atomic<bool> stop{false};
        const auto four = [] { return std::size_t{4}; };
        auto first = std::async(std::launch::async, [&] { return peers[0]->merger->merge(ga, a, four, 0.1, stop); });
        auto second = std::async(std::launch::async, [&] { return peers[1]->merger->merge(ga, a, four, 0.1, stop); });
        for (auto *f : {&first, &second}) {
            const auto r = f->get();
            QVERIFY2(r.sealed, r.note.c_str());
            QCOMPARE(r.groups, std::size_t{1}); // nobody else came within the wait
            QVERIFY(r.average.empty());         // the step is A's own average
        }
        std::vector<std::future<MergeResult>> late;
        for (std::size_t i = 2; i < 4; ++i)
            late.push_back(std::async(std::launch::async, [&, i] { return peers[i]->merger->merge(gb, b, four, 0.1, stop); }));
        for (auto &f : late) {
            const auto r = f.get();
            QVERIFY2(r.sealed && !r.ownMerged, r.note.c_str());
            QCOMPARE(r.groups, std::size_t{1});
            QCOMPARE(r.weight, 10L);
            QCOMPARE(r.peers, std::size_t{2});
            QVERIFY(r.average == decodeUpdate(*a));
        }
    }

    // A peer whose DHT reads show the groups' records but no seal (here its DHT is another
    // network, holding copies of A's and B's plain records and a third group C that no seal
    // names) asks a member for the seal it merged: it takes exactly the sealed A and B, bit for
    // bit as their members, not the three groups it saw.
    void aPeerThatReadsNoSealAsksAMemberForIt()
    {
        auto peers = makePeers(4);
        auto aside = makePeers(2); // aside[0] reads there; aside[1] serves group C
        const auto a = fp16Update(ramp(1.0F, 0.5F), 10), b = fp16Update(ramp(-3.0F, 0.25F), 30);
        const auto c = fp16Update(ramp(5.0F, -1.0F), 20);
        const GroupInfo ga = groupOf("e5-aaaa", peers, 0), gb = groupOf("e5-bbbb", peers, 2);
        std::atomic<bool> stop{false};
        auto results = mergeAtOnce(peers, 4, ga, a, gb, b, 4, stop);
        const auto expected = mergeAverages({decodeUpdate(*a), decodeUpdate(*b)}, {10, 30});
        for (auto &f : results)
            QVERIFY(f.get().average == expected);
        const auto key = groupsKey(Run, Epoch);
        const double now = unixNow();
        std::uint64_t valueId = 100;
        const auto copy = [&](const DhtNode &signer, const GroupRecord &r) {
            return aside[1]->dht->publishRaw(key, signer.encodeRecord(key, encodeGroupRecord(r), 1, now, now + 60.0),
                                             ++valueId);
        };
        for (std::size_t i = 0; i < 4; ++i)
            QVERIFY(copy(*peers[i]->dht, record("", i < 2 ? ga.groupId : gb.groupId, i < 2 ? 10 : 30, 2,
                                                updateDigest(i < 2 ? *a : *b), peers[i]->service->endpoint())));
        aside[1]->service->addGroupUpdate("e5-cccc", c);
        const DhtNode other(PeerIdentity::generate());
        for (const DhtNode *signer : {static_cast<const DhtNode *>(aside[1]->dht.get()), &other})
            QVERIFY(copy(*signer, record("", "e5-cccc", 20, 2, updateDigest(*c), aside[1]->service->endpoint())));
        const auto r = aside[0]->merger->adopt(Epoch, Elements, [] { return std::size_t{6}; }, stop);
        QVERIFY2(r.sealed, r.note.c_str());
        QCOMPARE(r.groups, std::size_t{2});
        QCOMPARE(r.weight, 40L);
        QVERIFY(r.average == expected);
        QVERIFY2(r.note.find("e5-cccc not merged: the epoch's seal leaves it out") != std::string::npos, r.note.c_str());
        long long asked = 0;
        for (const auto &p : peers)
            asked += p->service->served("seal?");
        QVERIFY(asked >= 1);
    }

    // Of two seals, the heavier one that names groups nobody recorded is passed over (after
    // waiting for its records); the one every group's records confirm is merged by all.
    void aSealNamingUnrecordedGroupsIsPassedOver()
    {
        auto peers = makePeers(5);
        const auto a = fp16Update(ramp(1.0F, 0.5F), 10), b = fp16Update(ramp(-3.0F, 0.25F), 30);
        const GroupInfo ga = groupOf("e5-aaaa", peers, 0), gb = groupOf("e5-bbbb", peers, 2);
        auto forged = record("", "e5-zzzz", 50, 2, std::string(64, 'f'), peers[4]->service->endpoint());
        forged.seal = {{"e5-zzzz", 50, std::string(64, 'f')}, {ga.groupId, 10, updateDigest(*a)}};
        QVERIFY(peers[4]->dht->publish(groupsKey(Run, Epoch), encodeGroupRecord(forged), 60.0));
        std::atomic<bool> stop{false};
        auto results = mergeAtOnce(peers, 4, ga, a, gb, b, 4, stop);
        const auto expected = mergeAverages({decodeUpdate(*a), decodeUpdate(*b)}, {10, 30});
        for (auto &f : results) {
            const auto r = f.get();
            QVERIFY2(r.sealed, r.note.c_str());
            QCOMPARE(r.groups, std::size_t{2});
            QVERIFY(r.average == expected);
        }
    }
};

QTEST_GUILESS_MAIN(TestGroupSeal)
#include "tst_groupseal.moc"
