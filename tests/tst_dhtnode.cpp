// Signed, sequence-numbered, expiring records on OpenDHT (core/net/DhtNode.h), three nodes on
// 127.0.0.1 with ephemeral ports.
#include "net/DhtNode.h"
#include "util/Error.h"
#include "util/Clock.h"

#include <QtTest>

#include <algorithm>
#include <chrono>
#include <future>
#include <thread>

using namespace dedloc;

namespace {


// Fetches until `accept` holds or 20 s pass (the DHT converges in about 2 s on loopback).
std::vector<SignedRecord> fetchUntil(DhtNode &node, const std::string &key,
                                     const std::function<bool(const std::vector<SignedRecord> &)> &accept)
{
    std::vector<SignedRecord> records;
    for (int attempt = 0; attempt < 40; ++attempt) {
        records = node.fetch(key, 1.0);
        if (accept(records))
            return records;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return records;
}

} // namespace

class TestDhtNode final : public QObject {
    Q_OBJECT

    PeerIdentity m_a = PeerIdentity::generate();
    PeerIdentity m_b = PeerIdentity::generate();
    PeerIdentity m_c = PeerIdentity::generate();
    std::unique_ptr<DhtNode> m_nodeA, m_nodeB, m_nodeC;
    // Long enough for a node to give up a silent peer (one restarted after 30 s was never found
    // again, one restarted after 3 s was).
    static constexpr int RestartAfterSeconds = 40;

    // A fourth node, which a test may stop: it has joined the three others when this returns.
    std::unique_ptr<DhtNode> startNode()
    {
        auto node = std::make_unique<DhtNode>(PeerIdentity::generate());
        node->bootstrap("127.0.0.1:" + std::to_string(m_nodeA->port()));
        if (!node->waitForNodes(3, 20.0))
            qWarning("the fourth node knows %u nodes", node->knownNodes());
        return node;
    }

    static std::function<bool(const std::vector<SignedRecord> &)> payloadIs(std::string payload)
    {
        return [payload](const auto &r) { return r.size() == 1 && r[0].payload == payload; };
    }

private Q_SLOTS:
    void initTestCase()
    {
        m_nodeA = std::make_unique<DhtNode>(m_a);
        m_nodeB = std::make_unique<DhtNode>(m_b);
        m_nodeC = std::make_unique<DhtNode>(m_c);
        QVERIFY(m_nodeA->port() > 0);
        const auto entry = "127.0.0.1:" + std::to_string(m_nodeA->port());
        m_nodeB->bootstrap(entry);
        m_nodeC->bootstrap(entry);
    }

    void publishedRecordReachesAnotherPeer()
    {
        const auto key = runKey("dht-test", "progress");
        QCOMPARE(key, std::string("dedloc/dht-test/progress"));
        QVERIFY(m_nodeA->publish(key, "epoch=1", 60.0));
        const auto records = fetchUntil(*m_nodeB, key, [](const auto &r) { return r.size() == 1; });
        QCOMPARE(records.size(), std::size_t{1});
        QCOMPARE(records[0].peerId, m_a.peerId());
        // The signer's key comes with the record: the CURVE key of any endpoint it advertises.
        QVERIFY(records[0].publicKey == m_a.publicKey());
        QVERIFY(records[0].publicKey != m_b.publicKey());
        QCOMPARE(records[0].payload, std::string("epoch=1"));
        QVERIFY(records[0].expiresAt > unixNow() + 50.0);
    }

    void newestSequenceWins()
    {
        const auto key = runKey("dht-test", "newest");
        QVERIFY(m_nodeA->publish(key, "old", 60.0));
        QVERIFY(m_nodeA->publish(key, "new", 60.0));
        const auto records = fetchUntil(*m_nodeC, key,
                                        [](const auto &r) { return r.size() == 1 && r[0].payload == "new"; });
        QCOMPARE(records.size(), std::size_t{1}); // one record per peer, never the old beside the new
        QCOMPARE(records[0].payload, std::string("new"));
    }

    // Every node that holds a key keeps the newest copy of a peer's record, not the first: once
    // the publisher is gone (or in a swarm larger than the nodes holding a key, where readers
    // never ask the publisher's node), the others' copies are all that readers get.
    void aNewerRecordReplacesItsCopiesOnOtherNodes()
    {
        const auto key = runKey("dht-test", "replaced");
        auto publisher = startNode();
        QVERIFY(publisher->publish(key, "first", 60.0));
        QCOMPARE(fetchUntil(*m_nodeC, key, payloadIs("first")).size(), std::size_t{1});
        QVERIFY(publisher->publish(key, "second", 60.0));
        publisher.reset();
        const auto records = fetchUntil(*m_nodeC, key, payloadIs("second"));
        QCOMPARE(records.size(), std::size_t{1});
        QCOMPARE(records[0].payload, std::string("second"));
    }

    // A record signed by another peer under the value id of a peer's record does not take its
    // place, nor does an older record of the same peer.
    void nobodyElseReplacesAPeersRecord()
    {
        const auto key = runKey("dht-test", "squatted");
        auto publisher = startNode();
        QVERIFY(publisher->publish(key, "mine", 60.0));
        QCOMPARE(fetchUntil(*m_nodeC, key, payloadIs("mine")).size(), std::size_t{1});
        const auto id = publisher->valueId(key);
        const double now = unixNow();
        (void)m_nodeC->publishRaw(key, m_nodeC->encodeRecord(key, "squatter", 1, now, now + 60), id);
        (void)m_nodeC->publishRaw(key, publisher->encodeRecord(key, "older", 1, now, now + 60), id);
        publisher.reset();
        std::this_thread::sleep_for(std::chrono::seconds(1));
        const auto records = fetchUntil(*m_nodeA, key, payloadIs("mine"));
        QCOMPARE(records.size(), std::size_t{1});
        QCOMPARE(records[0].payload, std::string("mine"));
    }

    // Nor does anybody else's record take the place of one that expired (its owner, silent for a
    // while, would find its next records refused wherever the stranger's stayed).
    void anExpiredRecordIsNotTakenByAnotherPeer()
    {
        const auto key = runKey("dht-test", "lapsed");
        auto publisher = startNode();
        QVERIFY(publisher->publish(key, "lapses", 5.0));
        QCOMPARE(fetchUntil(*m_nodeC, key, payloadIs("lapses")).size(), std::size_t{1});
        std::this_thread::sleep_for(std::chrono::seconds(6));
        const double now = unixNow();
        (void)m_nodeC->publishRaw(key, m_nodeC->encodeRecord(key, "squatter", 1, now, now + 60), publisher->valueId(key));
        std::this_thread::sleep_for(std::chrono::seconds(1));
        QVERIFY(publisher->publish(key, "back", 60.0));
        publisher.reset();
        const auto records = fetchUntil(*m_nodeA, key, [](const auto &r) {
            return std::any_of(r.begin(), r.end(), [](const auto &x) { return x.payload == "back"; });
        });
        QVERIFY(std::any_of(records.begin(), records.end(), [](const auto &x) { return x.payload == "back"; }));
    }

    // The lead's server restarts (same address, a fresh node that knows nobody) after the peers'
    // nodes gave it up: a ping of the bootstrap peers joins them again, and records flow.
    void aRestartedBootstrapNodeIsFoundAgain()
    {
        const auto key = runKey("dht-test", "restarted");
        auto entry = std::make_unique<DhtNode>(PeerIdentity::generate());
        const auto port = entry->port();
        const auto address = "127.0.0.1:" + std::to_string(port);
        DhtNode peer(PeerIdentity::generate()), other(PeerIdentity::generate());
        peer.bootstrap(address);
        other.bootstrap(address);
        QVERIFY(peer.waitForNodes(2, 20.0));
        entry.reset();
        std::this_thread::sleep_for(std::chrono::seconds(RestartAfterSeconds));
        entry = std::make_unique<DhtNode>(PeerIdentity::generate(), port);
        QVERIFY(peer.publish(key, "after the restart", 60.0));
        if (entry->waitForNodes(1, 3.0)) // what this case is about did not happen
            qWarning("a peer still pinged the restarted node by itself after %d s", RestartAfterSeconds);
        peer.bootstrapAgain();
        QVERIFY(entry->waitForNodes(1, 10.0));
        QVERIFY(peer.publish(key, "after the restart", 60.0));
        QCOMPARE(fetchUntil(*entry, key, payloadIs("after the restart")).size(), std::size_t{1});
    }

    void forgedReplayedExpiredAndFutureRecordsAreRefused()
    {
        const auto key = runKey("dht-test", "attacks");
        const double now = unixNow();
        // C forges: a record with a flipped byte (signature no longer matches).
        auto forged = m_nodeC->encodeRecord(key, "epoch=999", 1, now, now + 60);
        forged[forged.size() / 2] ^= 0x01;
        QVERIFY(m_nodeC->publishRaw(key, forged, 11));
        // C replays A's valid record, made for another key, under this key.
        QVERIFY(m_nodeC->publishRaw(key, m_nodeA->encodeRecord(runKey("dht-test", "other"), "x", 1, now, now + 60), 12));
        // Expired, and from 100 s in the future (clock skew allowance is 3 s).
        QVERIFY(m_nodeC->publishRaw(key, m_nodeC->encodeRecord(key, "expired", 2, now - 120, now - 60), 13));
        QVERIFY(m_nodeC->publishRaw(key, m_nodeB->encodeRecord(key, "future", 3, now + 100, now + 160), 14));
        // Not a record at all.
        QVERIFY(m_nodeC->publishRaw(key, "garbage bytes", 15));
        // One honest record, so we know when the others have had time to arrive too.
        QVERIFY(m_nodeB->publish(key, "honest", 60.0));
        const auto records = fetchUntil(*m_nodeA, key, [](const auto &r) { return !r.empty(); });
        QCOMPARE(records.size(), std::size_t{1});
        QCOMPARE(records[0].peerId, m_b.peerId());
        QCOMPARE(records[0].payload, std::string("honest"));
    }

    // Each refusal names its reason (fetch's debug log counts refusals by reason, so that stale
    // copies are told from forgeries).
    void eachRefusalSaysWhy()
    {
        const auto key = runKey("dht-test", "why");
        const double now = unixNow();
        const auto verdict = [&](const std::string &bytes) {
            const char *why = "";
            const auto r = verifySignedRecord(
                key, {reinterpret_cast<const std::uint8_t *>(bytes.data()), bytes.size()}, now, 3.0, &why);
            return r ? std::string("accepted") : std::string(why);
        };
        auto forged = m_nodeA->encodeRecord(key, "epoch=999", 1, now, now + 60);
        forged[forged.find("epoch=999") + 6] = '8'; // the payload no longer matches the signature
        QCOMPARE(verdict(m_nodeA->encodeRecord(key, "ok", 1, now, now + 60)), std::string("accepted"));
        QCOMPARE(verdict(forged), std::string("bad signature"));
        QCOMPARE(verdict(m_nodeA->encodeRecord(runKey("dht-test", "other"), "x", 1, now, now + 60)),
                 std::string("another key"));
        QCOMPARE(verdict(m_nodeA->encodeRecord(key, "old", 2, now - 120, now - 60)), std::string("expired"));
        QCOMPARE(verdict(m_nodeA->encodeRecord(key, "later", 3, now + 100, now + 160)), std::string("from the future"));
        QCOMPARE(verdict("garbage bytes"), std::string("malformed"));
    }

    void oversizedPayloadIsRefused()
    {
        QVERIFY_THROWS_EXCEPTION(Error, m_nodeA->publish(runKey("dht-test", "big"), std::string(70 * 1024, 'x'), 60.0));
    }

    // Last: the nodes it stops stay in the others' routing tables a while, and slow their reads.
    // More nodes than hold a key (OpenDHT stores a value on the 8 closest): a reader is answered
    // by the nodes that hold the key, rarely by the publisher's own, and still gets each peer's
    // newest record.
    void eachPeersNewestRecordReachesEveryReaderInALargerSwarm()
    {
        const auto key = runKey("dht-test", "twelve");
        // The nodes start, and then publish, all at once (one by one took 44 s).
        std::vector<std::future<std::unique_ptr<DhtNode>>> starting;
        for (int i = 0; i < 12; ++i)
            starting.push_back(std::async(std::launch::async, [this] { return startNode(); }));
        std::vector<std::unique_ptr<DhtNode>> swarm;
        for (auto &f : starting)
            swarm.push_back(f.get());
        const auto publishAll = [&](const std::string &payload) {
            std::vector<std::future<bool>> puts;
            for (const auto &n : swarm)
                puts.push_back(std::async(std::launch::async, [&n, &key, payload] { return n->publish(key, payload, 60.0); }));
            int confirmed = 0;
            for (auto &f : puts)
                confirmed += f.get() ? 1 : 0;
            return confirmed;
        };
        QCOMPARE(publishAll("first"), 12);
        QCOMPARE(publishAll("second"), 12);
        const auto newest = [](const std::vector<SignedRecord> &r) {
            return std::count_if(r.begin(), r.end(), [](const auto &x) { return x.payload == "second"; });
        };
        for (DhtNode *reader : {swarm[0].get(), swarm[11].get(), m_nodeB.get()}) {
            const auto records = fetchUntil(*reader, key, [&](const auto &r) { return newest(r) == 12; });
            QCOMPARE(newest(records), 12);
        }
    }

    void cleanupTestCase()
    {
        m_nodeC.reset();
        m_nodeB.reset();
        m_nodeA.reset();
    }
};

QTEST_APPLESS_MAIN(TestDhtNode)
#include "tst_dhtnode.moc"
