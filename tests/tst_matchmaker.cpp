// Matchmaking (core/averaging/Matchmaker.h): peers in threads, each with its own OpenDHT node and
// service socket on loopback (tests/support/MatchmakerFixtures.h), look for a group at the same time.
#include "MatchmakerFixtures.h"
#include "util/Clock.h"

#include <QTest>
#include <QThread>

#include <nlohmann/json.hpp>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <thread>

using namespace dedloc;
using namespace dedloc::test;
using nlohmann::json;

namespace {

constexpr auto &message = encodeServiceMessage;

} // namespace

class TestMatchmaker final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Peers ask each other at the same moment: one group, one id, one member order, every
    // member at its own index, exactly one leader; no deadlock.
    void simultaneousPeersFormOneGroup_data()
    {
        QTest::addColumn<int>("count");
        QTest::newRow("2 peers") << 2;
        QTest::newRow("4 peers") << 4;
    }
    void simultaneousPeersFormOneGroup()
    {
        QFETCH(int, count);
        auto peers = makePeers(std::vector<bool>(static_cast<std::size_t>(count), false), fastOptions());
        std::atomic<bool> stop{false};
        const auto start = std::chrono::steady_clock::now();
        std::vector<std::future<std::optional<FormedGroup>>> results;
        for (auto &p : peers)
            results.push_back(std::async(std::launch::async, [&p, &stop, count] {
                return p->matchmaker->formGroup(7, "schema-a", [count] { return std::size_t(count); }, stop);
            }));
        std::vector<FormedGroup> groups;
        for (auto &r : results) {
            auto g = r.get();
            QVERIFY(g.has_value());
            groups.push_back(*g);
        }
        // Everyone expected joined: the leader did not wait for its deadline.
        QVERIFY2(seconds(start) < fastOptions().window + 1.0, qPrintable(QString::number(seconds(start))));
        int leaders = 0;
        for (std::size_t i = 0; i < groups.size(); ++i) {
            QCOMPARE(groups[i].info.groupId, groups[0].info.groupId);
            QCOMPARE(groups[i].info.epoch, 7L);
            QCOMPARE(groups[i].info.members.size(), std::size_t(count));
            for (std::size_t k = 0; k < groups[i].info.members.size(); ++k)
                QCOMPARE(groups[i].info.members[k].peerId, groups[0].info.members[k].peerId);
            QCOMPARE(groups[i].info.members[groups[i].myIndex].peerId, peers[i]->identity.peerId());
            std::int64_t shares = 0;
            for (std::size_t k = 0; k < groups[i].info.members.size(); ++k) {
                QCOMPARE(groups[i].info.members[k].share, groups[0].info.members[k].share);
                shares += groups[i].info.members[k].share;
            }
            QCOMPARE(shares, ShardShareTotal); // the leader's shares, as every member received them
            leaders += groups[i].leader ? 1 : 0;
        }
        QCOMPARE(leaders, 1);
    }

    // A peer whose parameters may differ asks for repair: the group it joins averages the state
    // too, as both members' BEGIN says; once repaired, the next group does not. The bandwidths
    // set last (rates measured in rounds) decide the leader's shares: 30 and 10 give 3/4 and 1/4.
    // More peers than one group holds (32, groups of 8), all at once: each finds a group, the
    // groups are disjoint and none exceeds the target size. With every peer asking the earliest
    // one first, 19-22 of the 32 found a group: the unmatched ones asked one another while each
    // had closed its own gather to ask.
    void morePeersThanOneGroupHoldsAllFindAGroup()
    {
        auto options = fastOptions();
        options.targetGroupSize = 8;
        options.window = 3.0;
        constexpr std::size_t count = 32;
        auto peers = makePeers(std::vector<bool>(count, false), options);
        std::atomic<bool> stop{false};
        std::vector<std::future<std::optional<FormedGroup>>> results;
        for (auto &p : peers)
            results.push_back(std::async(std::launch::async, [&p, &stop] {
                return p->matchmaker->formGroup(5, "schema-a", [] { return count; }, stop);
            }));
        std::map<std::string, std::set<std::string>> groups;
        std::size_t found = 0;
        for (std::size_t i = 0; i < count; ++i) {
            const auto g = results[i].get();
            if (!g)
                continue;
            ++found;
            QVERIFY(g->info.members.size() <= options.targetGroupSize);
            auto &members = groups[g->info.groupId];
            for (const auto &m : g->info.members)
                members.insert(m.peerId);
            QVERIFY(members.count(peers[i]->identity.peerId()) == 1);
        }
        std::set<std::string> all;
        std::size_t inGroups = 0;
        for (const auto &[id, members] : groups) {
            inGroups += members.size();
            all.insert(members.begin(), members.end());
        }
        QCOMPARE(all.size(), inGroups); // no peer in two groups
        QVERIFY2(found == count, qPrintable(QStringLiteral("%1 of %2 peers found a group, in %3 groups")
                                                .arg(found).arg(count).arg(groups.size())));
    }

    void repairAndBandwidthReachTheWholeGroup()
    {
        auto peers = makePeers({false, false}, fastOptions());
        for (const bool repair : {true, false}) {
            peers[0]->matchmaker->setRepair(repair);
            peers[1]->matchmaker->setRepair(false);
            peers[0]->matchmaker->setBandwidth(repair ? 30.0 : 10.0);
            peers[1]->matchmaker->setBandwidth(10.0);
            const auto [ga, gb] = formPair(peers, repair ? 1 : 2);
            QVERIFY(ga && gb);
            QCOMPARE(ga->info.groupId, gb->info.groupId);
            QVERIFY(ga->info.stateRound() == repair && gb->info.stateRound() == repair);
            const std::int64_t first = repair ? ShardShareTotal / 4 * 3 : ShardShareTotal / 2;
            for (const auto *g : {&*ga, &*gb}) // both copies name the member that asked
                for (const auto &m : g->info.members) {
                    const bool isFirst = m.peerId == peers[0]->identity.peerId();
                    QCOMPARE(m.repair, repair && isFirst);
                    QCOMPARE(m.share, isFirst ? first : ShardShareTotal - first);
                }
        }
    }

    // A leader whose view of the swarm misses a peer (behind NAT, its DHT reads are partial)
    // takes a follower's larger count: it expects 2, its client-mode follower says 3, so it does
    // not form the pair at once but waits for the third until its deadline.
    void aFollowersLargerCountKeepsTheLeaderWaiting()
    {
        auto peers = makePeers({false, true}, fastOptions());
        const auto start = std::chrono::steady_clock::now();
        const auto [l, f] = formPair(peers, 1, 2, 3);
        QVERIFY(l && f && l->leader);
        QCOMPARE(l->info.members.size(), std::size_t(2));
        QVERIFY2(seconds(start) >= fastOptions().window - 0.3, qPrintable(QString::number(seconds(start))));
    }

    // A client-mode peer joins but never leads, and reduces no shard (bandwidth 0, no endpoint).
    void clientModeNeverLeads()
    {
        auto peers = makePeers({true, false}, fastOptions());
        const auto [c, r] = formPair(peers, 1);
        QVERIFY(c && r && !c->leader && r->leader);
        const auto &me = c->info.members[c->myIndex];
        QVERIFY(me.endpoint.empty());
        QCOMPARE(me.bandwidth, 0.0);
        QCOMPARE(me.weight, 1.0); // it still sends its gradients
        // The leader decided the shards: all of them for the one member that can reduce, the
        // same in both members' copies of BEGIN.
        QCOMPARE(me.share, std::int64_t{0});
        QCOMPARE(c->info.members[1 - c->myIndex].share, ShardShareTotal);
        QCOMPARE(r->info.members[r->myIndex].share, ShardShareTotal);
    }

    // Two client-mode peers cannot form a group (nobody leads): both give up within the window
    // plus the request timeouts, with a reason.
    void clientsAloneGiveUp()
    {
        auto peers = makePeers({true, true}, fastOptions());
        std::atomic<bool> stop{false};
        const auto start = std::chrono::steady_clock::now();
        std::string why;
        const auto g = peers[0]->matchmaker->formGroup(1, "s", [] { return std::size_t(2); }, stop, &why);
        QVERIFY(!g);
        QVERIFY(!why.empty());
        QVERIFY(seconds(start) <= fastOptions().window + 2 * fastOptions().requestTimeout + 1.0);
    }

    // Peers with different tensor schemas never end in one group.
    void schemaMismatchIsRefused()
    {
        auto peers = makePeers({false, false}, fastOptions());
        std::atomic<bool> stop{false};
        auto a = std::async(std::launch::async, [&] {
            return peers[0]->matchmaker->formGroup(3, "schema-a", [] { return std::size_t(2); }, stop);
        });
        auto b = std::async(std::launch::async, [&] {
            return peers[1]->matchmaker->formGroup(3, "schema-b", [] { return std::size_t(2); }, stop);
        });
        QVERIFY(!a.get());
        QVERIFY(!b.get());
    }

    // A peer this one has banned (it sent invalid data, averaging/BanList.h) is neither asked to
    // lead nor accepted as a follower. B has banned A; without the ban these two always form a
    // group (simultaneousPeersFormOneGroup). A declares first, so B would join it: B does not,
    // and when A, alone, asks B in the second half of its window, B refuses it.
    void bannedPeerIsNeitherAskedNorAccepted()
    {
        auto peers = makePeers({false, false}, fastOptions());
        auto &a = *peers[0];
        auto &b = *peers[1];
        auto bans = std::make_shared<BanList>();
        QVERIFY(bans->strike(a.identity.peerId(), "sent NaN", unixNow(), 3));
        b.matchmaker.reset();
        b.service = std::make_unique<PeerService>("mm-test", "tcp://127.0.0.1:*", 128 * 1024, nullptr, bans);
        MatchSelf self{b.identity.peerId(), "mm-test", "tcp://127.0.0.1:11", -1.0, false, true, b.identity.publicKey()};
        b.matchmaker = std::make_unique<Matchmaker>(*b.dht, b.service.get(), self, fastOptions(), nullptr, bans);
        std::atomic<bool> stop{false};
        std::string whyA, whyB;
        auto fa = std::async(std::launch::async, [&] {
            return a.matchmaker->formGroup(5, "s", [] { return std::size_t(2); }, stop, &whyA);
        });
        QThread::msleep(300);
        auto fb = std::async(std::launch::async, [&] {
            return b.matchmaker->formGroup(5, "s", [] { return std::size_t(2); }, stop, &whyB);
        });
        QVERIFY(!fa.get());
        QVERIFY(!fb.get());
        QVERIFY2(QString::fromStdString(whyA).contains(QStringLiteral("refused: banned")), whyA.c_str());
    }

    // Matchmaking keys come from a ring of epochs: a leader declared for epoch 3 + EpochKeyRing
    // sits under the key of epoch 3, and a follower searching at epoch 3 never asks it.
    void aDeclarationOfAnotherEpochUnderTheSameKeyIsNotAsked()
    {
        QCOMPARE(matchmakingKey("r", 3, "s"), matchmakingKey("r", 3 + EpochKeyRing, "s"));
        QVERIFY(matchmakingKey("r", 3, "s") != matchmakingKey("r", 4, "s"));
        FakeLeader leader([](const FakeLeader &, const JoinRequest &) {
            return Replies{message("accept", {{"d", unixNow() + 0.2}})};
        });
        const auto options = fastOptions();
        auto follower = followerOf(leader, options);
        QVERIFY(leader.declare(3 + EpochKeyRing, "s", unixNow() + 30.0));
        const auto out = formGroupGuarded(*follower->matchmaker, options);
        QVERIFY2(out.finished && !out.group, out.why.c_str());
        QCOMPARE(leader.joins.load(), 0);
    }

    // Two leaders at one epoch would split the swarm. Leader B has gathered a follower when a
    // leader A ordered before it turns up on the DHT (its declaration arrived late): B asks A,
    // its own gather still open. If A accepts, B sends its follower DISBAND naming A (whose
    // declaration the follower's view may lack) and becomes a member of A's group; if A is
    // silent, B's follower hears nothing of it and B leads it as before.
    void aLeaderMergesIntoOneOrderedBeforeIt_data()
    {
        QTest::addColumn<bool>("accepts");
        QTest::newRow("A accepts") << true;
        QTest::newRow("A is silent") << false;
    }
    void aLeaderMergesIntoOneOrderedBeforeIt()
    {
        QFETCH(bool, accepts);
        auto options = fastOptions();
        options.window = 6.0; // room for A's declaration to reach B on a loaded machine
        FakeLeader a([accepts](const FakeLeader &l, const JoinRequest &j) {
            GroupInfo g{"e3-a", 3, {l.asMember(), {j.peerId, j.allReduceEndpoint, -1.0, 1.0, j.publicKey}}};
            g.members[0].share = g.members[1].share = ShardShareTotal / 2; // two reducers, unknown rates
            return accepts ? Replies{message("accept", {{"d", unixNow() + 1.0}}), message("begin", groupToJson(g))}
                           : Replies{};
        });
        auto peers = makePeers({false}, options);
        auto &b = *peers[0];
        b.dht->bootstrap("127.0.0.1:" + std::to_string(a.dht.port()));
        QVERIFY(b.dht->waitForNodes(1, 5.0) && a.dht.waitForNodes(1, 5.0));
        std::atomic<bool> stop{false};
        const double searchStart = unixNow();
        auto led = std::async(std::launch::async, [&] {
            return b.matchmaker->formGroup(3, "s", [] { return std::size_t(3); }, stop);
        });
        // The follower: a plain DEALER that joins B and reads what B sends it.
        const auto c = PeerIdentity::generate();
        zmq::context_t context;
        zmq::socket_t dealer(context, zmq::socket_type::dealer);
        dealer.set(zmq::sockopt::linger, 0);
        dealer.set(zmq::sockopt::rcvtimeo, 9000);
        dealer.connect(b.service->endpoint());
        const JoinRequest join{"mm-test", 3, "s", c.peerId(), "", -1.0, true, true, c.publicKey(), false, 3};
        auto next = [&] {
            zmq::message_t m;
            return dealer.recv(m) ? parseServiceMessage({m.data<std::uint8_t>(), m.size()}) : json{{"t", "silence"}};
        };
        for (int tries = 0; tries < 20; ++tries) { // until B gathers (its search has started)
            const auto bytes = message("join", joinToJson(join));
            dealer.send(zmq::buffer(bytes));
            if (next().at("t") == "accept")
                break;
            QThread::msleep(100);
        }
        QCOMPARE(b.service->followers().size(), std::size_t(1));
        // Gathering until just before B's deadline: A orders before B. (Publishing takes up to a
        // second on loopback: the DHT confirms it.)
        QVERIFY(a.declare(3, "s", searchStart + options.window - 0.5));
        const auto told = next();
        const auto group = led.get();
        QVERIFY(group);
        QCOMPARE(a.joins.load(), 1); // asked once
        if (accepts) {
            QCOMPARE(told.value("t", std::string()) + " " + told.value("why", std::string()),
                     "disband merging into the group of " + a.identity.peerId().substr(0, 8));
            QCOMPARE(suggestedLeaderFromJson(told.at("l"), 3, "s").peerId, a.identity.peerId());
            QVERIFY(!group->leader);
            QCOMPARE(group->info.groupId, std::string("e3-a"));
        } else {
            QCOMPARE(told.value("t", std::string()), std::string("begin"));
            QVERIFY(group->leader);
            QCOMPARE(group->info.members.size(), std::size_t(2));
        }
    }

    // A suggested leader is only a candidate to ask: its key must be its peer id's, and it must
    // name a service endpoint; anything else is refused (and the follower looks on its own).
    void suggestedLeaderIsChecked()
    {
        const auto a = PeerIdentity::generate(), other = PeerIdentity::generate();
        const Declaration d{a.peerId(), 9, "x", "tcp://10.0.0.7:40001", 1700000000.5, false, a.publicKey()};
        const auto j = suggestedLeaderToJson(d);
        const auto back = suggestedLeaderFromJson(j, 3, "s");
        QVERIFY(back.peerId == a.peerId() && back.publicKey == a.publicKey() && back.expiresAt == 1700000000.5);
        QVERIFY(back.serviceEndpoint == d.serviceEndpoint && back.epoch == 3 && back.schema == "s" && !back.clientMode);
        auto otherKey = j, noEndpoint = j, file = j;
        otherKey["k"] = suggestedLeaderToJson({other.peerId(), 3, "s", "tcp://1.2.3.4:5", 1.0, false, other.publicKey()})["k"];
        noEndpoint["a"] = "";
        file["a"] = "file:///etc/passwd";
        for (const auto &bad : {otherKey, noEndpoint, file, json(5), json::object()})
            QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)suggestedLeaderFromJson(bad, 3, "s"));
    }

    // `stop` ends a search at once.
    void stopEndsTheSearch()
    {
        auto peers = makePeers({false}, fastOptions());
        std::atomic<bool> stop{false};
        auto f = std::async(std::launch::async, [&] {
            return peers[0]->matchmaker->formGroup(1, "s", [] { return std::size_t(2); }, stop);
        });
        QThread::msleep(300);
        const auto start = std::chrono::steady_clock::now();
        stop = true;
        QVERIFY(!f.get());
        QVERIFY2(seconds(start) < 1.5, qPrintable(QString::number(seconds(start)))); // a DHT call in flight ends first
    }
};

QTEST_GUILESS_MAIN(TestMatchmaker)
#include "tst_matchmaker.moc"
