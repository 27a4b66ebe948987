// Connections kept across all-reduce rounds (core/averaging/DealerPool.h): the pool's rules, and
// the endpoint's rounds on loopback sending on the connections an earlier round opened.
#include "AllReduceSwarm.h"
#include "averaging/DealerPool.h"
#include "net/TcpThroughput.h"

#include <QtTest>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <map>
#include <set>
#include <thread>

using namespace dedloc;
using namespace dedloc::allreduce;
using namespace dedloc::test;

namespace {

DealerKey keyFor(const std::string &endpoint)
{
    DealerKey key{endpoint, {}};
    key.sendQueue = 8;
    return key;
}

// This process's TCP connections to `endpoints`, by local port: each one's peer.
std::map<int, std::string> connectionsTo(const std::vector<std::string> &endpoints)
{
    std::map<int, std::string> out;
    for (const auto &c : tcpSendStatsTo(endpoints)) {
        sockaddr_in local{};
        socklen_t size = sizeof local;
        if (::getsockname(c.fd, reinterpret_cast<sockaddr *>(&local), &size) == 0)
            out[ntohs(local.sin_port)] = c.peer;
    }
    return out;
}

} // namespace

class TestDealerPool final : public QObject {
    Q_OBJECT

    zmq::context_t m_context;

    std::unique_ptr<zmq::socket_t> dealer()
    {
        auto s = std::make_unique<zmq::socket_t>(m_context, zmq::socket_type::dealer);
        s->set(zmq::sockopt::linger, 0);
        return s;
    }

  private Q_SLOTS:
    // Only a key equal in every field (the send buffer within 25 %) gets the kept socket back,
    // and only once.
    void aKeptConnectionServesOnlyItsOwnKey()
    {
        DealerPool pool;
        const auto now = PoolClock::now();
        const auto key = keyFor("tcp://127.0.0.1:1");
        auto s = dealer();
        const auto *kept = s.get();
        pool.give(key, std::move(s), now);
        auto otherEndpoint = keyFor("tcp://127.0.0.1:2");
        auto otherPeer = key;
        otherPeer.publicKey[0] = 1;
        auto otherQueue = key;
        otherQueue.sendQueue = 1;
        auto otherBuffer = key;
        otherBuffer.sendBuffer = 65536;
        auto nearBuffer = key;
        nearBuffer.sendBuffer = 80000;
        auto buffered = dealer();
        pool.give(nearBuffer, std::move(buffered), now);
        auto within = nearBuffer;
        within.sendBuffer = 100000; // 25 % more
        auto beyond = nearBuffer;
        beyond.sendBuffer = 100001;
        QVERIFY(!pool.take(beyond, now));
        // Given back under the key it was opened with, not the one it served: a chain of rounds
        // each within 25 % of the last cannot walk its key away from its real send buffer.
        DealerKey openedWith;
        QVERIFY(pool.take(within, now, &openedWith));
        QCOMPARE(openedWith.sendBuffer, 80000);
        auto otherReceive = key;
        otherReceive.receiveQueue = 8;
        for (const auto &k : {otherEndpoint, otherPeer, otherQueue, otherBuffer, otherReceive})
            QVERIFY(!pool.take(k, now));
        QCOMPARE(pool.size(), std::size_t{1});
        DealerKey opened;
        QCOMPARE(pool.take(key, now, &opened).get(), kept);
        QVERIFY(opened == key);
        QVERIFY(!pool.take(key, now));
        QCOMPARE(pool.size(), std::size_t{0});
    }

    // Beyond the capacity the connection idle longest closes; none is kept past maxIdle; a second
    // socket of a key already kept is not.
    void thePoolIsBoundedInCountAndAge()
    {
        DealerPool pool(2, std::chrono::seconds(10));
        auto t = PoolClock::now();
        pool.give(keyFor("tcp://a:1"), dealer(), t);
        pool.give(keyFor("tcp://b:1"), dealer(), t + std::chrono::seconds(1));
        pool.give(keyFor("tcp://b:1"), dealer(), t + std::chrono::seconds(1));
        QCOMPARE(pool.size(), std::size_t{2});
        pool.give(keyFor("tcp://c:1"), dealer(), t + std::chrono::seconds(2));
        QCOMPARE(pool.size(), std::size_t{2});
        QVERIFY(!pool.take(keyFor("tcp://a:1"), t + std::chrono::seconds(2)));
        QVERIFY(pool.take(keyFor("tcp://b:1"), t + std::chrono::seconds(2)));
        QVERIFY(!pool.take(keyFor("tcp://c:1"), t + std::chrono::seconds(13)));
        QCOMPARE(pool.size(), std::size_t{0});
        DealerPool none(0);
        none.give(keyFor("tcp://a:1"), dealer(), t);
        QCOMPARE(none.size(), std::size_t{0});
    }

    // What a reducer sends on an idle connection (nothing an honest one does) is read and
    // dropped between rounds, and whatever came after that before the next round too.
    void whatArrivesOnAnIdleConnectionIsDropped()
    {
        zmq::socket_t router(m_context, zmq::socket_type::router);
        router.set(zmq::sockopt::linger, 0);
        router.set(zmq::sockopt::rcvtimeo, 5000); // a failure fails, not hangs
        router.bind("tcp://127.0.0.1:*");
        const auto endpoint = router.get(zmq::sockopt::last_endpoint);
        auto s = dealer();
        s->connect(endpoint);
        s->send(zmq::str_buffer("hello"), zmq::send_flags::none);
        std::vector<zmq::message_t> hello;
        QVERIFY(zmq::recv_multipart(router, std::back_inserter(hello)));
        const auto sendBack = [&](int count) {
            for (int i = 0; i < count; ++i) {
                std::array<zmq::message_t, 2> frames{zmq::message_t(hello[0].data(), hello[0].size()),
                                                     zmq::message_t(std::string(1000, 'x'))};
                QVERIFY(zmq::send_multipart(router, frames));
            }
        };
        DealerPool pool;
        const auto key = keyFor(endpoint);
        pool.give(key, std::move(s), PoolClock::now());
        sendBack(3);
        std::size_t dropped = 0;
        for (int i = 0; i < 200 && dropped < 3; ++i) {
            dropped += pool.drain(PoolClock::now(), 1024);
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        QCOMPARE(dropped, std::size_t{3});
        QCOMPARE(pool.drain(PoolClock::now(), 1), std::size_t{0});
        sendBack(2);
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        auto back = pool.take(key, PoolClock::now());
        QVERIFY(back);
        zmq::message_t left;
        int late = 0; // on a loaded machine the second may still have been on its way at the take
        while (back->recv(left, zmq::recv_flags::dontwait))
            ++late;
        QVERIFY2(late < 2, "take() dropped nothing of what waited");
        back->send(zmq::str_buffer("again"), zmq::send_flags::none); // and still connected
        std::vector<zmq::message_t> again;
        QVERIFY(zmq::recv_multipart(router, std::back_inserter(again)));
        QCOMPARE(again.back().to_string(), std::string("again"));
    }

    // Three members, three rounds: the rounds after the first send on the connections the first
    // opened (the same local ports), and every round gives the exact average. Opened per round
    // (keepConnections false), each round's connections are new and closed after it.
    void roundsSendOnTheConnectionsTheFirstOpened()
    {
        for (const bool keep : {true, false}) {
            Swarm s({true, true, true}, {1.0, 2.0, 3.0}, 20000);
            std::vector<std::string> endpoints;
            for (const auto &m : s.members)
                endpoints.push_back(m.endpoint);
            AllReduceOptions o;
            o.partElements = 2000;
            o.keepConnections = keep;
            std::vector<std::map<int, std::string>> seen;
            for (int round = 0; round < 3; ++round) {
                for (std::size_t i = 0; i < 3; ++i)
                    s.values[i] = randomVector(20000, 100 + static_cast<unsigned>(i + 10 * round));
                const auto expected = s.expectedAverage({0, 1, 2});
                std::vector<std::thread> threads;
                for (std::size_t i = 0; i < 3; ++i)
                    threads.emplace_back([&, i] {
                        s.reports[i] =
                            s.endpoints[i]->run("round-" + std::to_string(round), s.members, i, s.values[i], o);
                    });
                for (auto &t : threads)
                    t.join();
                for (std::size_t i = 0; i < 3; ++i) {
                    QVERIFY(s.reports[i].complete);
                    QVERIFY(closeTo(s.values[i], expected, 0, expected.size()));
                }
                if (keep) {
                    seen.push_back(connectionsTo(endpoints));
                    QCOMPARE(seen.back().size(), std::size_t{6}); // each member to the two others
                } else {
                    QTRY_COMPARE(connectionsTo(endpoints).size(), std::size_t{0});
                }
            }
            if (keep) {
                QCOMPARE(seen[1], seen[0]);
                QCOMPARE(seen[2], seen[0]);
            }
        }
    }

    // A reducer that did not return every RESULT (it never came): the connection to it is not
    // kept; those to the members that did are.
    void aConnectionThatMissedResultsIsClosed()
    {
        Swarm s({true, true, true}, {1.0, 1.0, 1.0}, 6000);
        AllReduceOptions o;
        o.senderTimeout = 0.5;
        o.reducerTimeout = 1.0;
        s.run(o, {0, 1});
        QVERIFY(!s.reports[0].complete);
        QTRY_COMPARE(connectionsTo({s.members[2].endpoint}).size(), std::size_t{0});
        QCOMPARE(connectionsTo({s.members[1].endpoint}).size(), std::size_t{1}); // member 0's
        QCOMPARE(connectionsTo({s.members[0].endpoint}).size(), std::size_t{1}); // member 1's
    }
};

QTEST_GUILESS_MAIN(TestDealerPool)
#include "tst_dealerpool.moc"
