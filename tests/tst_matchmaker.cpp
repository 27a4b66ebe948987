// Matchmaking (core/averaging/Matchmaker.h): peers in threads, each with its own OpenDHT node and
// service socket on loopback, look for a group at the same time.
#include "net/DhtNode.h"
#include "net/PeerIdentity.h"
#include "averaging/Matchmaker.h"
#include "averaging/PeerService.h"
#include "util/Clock.h"

#include <QTest>
#include <QThread>

#include <chrono>
#include <future>
#include <memory>

using namespace dedloc;

namespace {

struct Peer {
    PeerIdentity identity = PeerIdentity::generate();
    std::unique_ptr<DhtNode> dht;
    std::unique_ptr<PeerService> service;
    std::unique_ptr<Matchmaker> matchmaker;
};

MatchmakingOptions fastOptions()
{
    MatchmakingOptions o;
    o.window = 2.0;
    o.requestTimeout = 1.0;
    o.fetchInterval = 0.1;
    return o;
}

std::vector<std::unique_ptr<Peer>> makePeers(const std::vector<bool> &clientMode, const MatchmakingOptions &options,
                                             const std::string &runId = "mm-test")
{
    std::vector<std::unique_ptr<Peer>> peers;
    for (std::size_t i = 0; i < clientMode.size(); ++i) {
        auto p = std::make_unique<Peer>();
        p->dht = std::make_unique<DhtNode>(p->identity);
        if (i > 0)
            p->dht->bootstrap("127.0.0.1:" + std::to_string(peers.front()->dht->port()));
        if (!clientMode[i])
            p->service = std::make_unique<PeerService>(runId);
        MatchSelf self{p->identity.peerId(), runId, clientMode[i] ? "" : "tcp://127.0.0.1:1" + std::to_string(i),
                       -1.0, clientMode[i], true, p->identity.publicKey()};
        p->matchmaker = std::make_unique<Matchmaker>(*p->dht, p->service.get(), self, options);
        peers.push_back(std::move(p));
    }
    for (auto &p : peers) // a swarm whose nodes know each other, as after a while in practice
        p->dht->waitForNodes(static_cast<unsigned>(std::min<std::size_t>(peers.size() - 1, 1)), 5.0);
    return peers;
}

double seconds(std::chrono::steady_clock::time_point since)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

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
            leaders += groups[i].leader ? 1 : 0;
        }
        QCOMPARE(leaders, 1);
    }

    // A client-mode peer joins but never leads, and reduces no shard (bandwidth 0, no endpoint).
    void clientModeNeverLeads()
    {
        auto peers = makePeers({true, false}, fastOptions());
        std::atomic<bool> stop{false};
        auto client = std::async(std::launch::async, [&] {
            return peers[0]->matchmaker->formGroup(1, "s", [] { return std::size_t(2); }, stop);
        });
        auto reachable = std::async(std::launch::async, [&] {
            return peers[1]->matchmaker->formGroup(1, "s", [] { return std::size_t(2); }, stop);
        });
        const auto c = client.get(), r = reachable.get();
        QVERIFY(c && r);
        QVERIFY(!c->leader);
        QVERIFY(r->leader);
        const auto &me = c->info.members[c->myIndex];
        QVERIFY(me.endpoint.empty());
        QCOMPARE(me.bandwidth, 0.0);
        QCOMPARE(me.weight, 1.0); // it still sends its gradients
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
