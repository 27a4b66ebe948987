// A trainer that nobody could check at start (core/peer/SwarmPeer.cpp recheckReachability):
// real `dedloc` processes on loopback. The first trainer of a run finds no donor to ask whether
// others can reach it, so its verdict is "unknown" and it acts as reachable. Its port forward is
// broken (it announces a port where nothing listens). Once a second trainer is up and donating,
// the first asks again, learns that it is unreachable and joins groups as a client from then
// on: both go on averaging with one model. Without the second check it stayed "reachable, not
// confirmed" for good, and every round that counted on it as leader or reducer failed.
#include "SwarmHarness.h"
#include "SwarmTestCase.h"

#include <QTest>

using namespace dedloc;
using namespace dedloc::test;

class TestSwarmLateReachability : public SwarmTestCase {
    Q_OBJECT

private Q_SLOTS:
    void theFirstTrainerChecksAgainOnceSomeoneCanTell()
    {
        const auto d = scratch();
        SwarmHarness h(m_app, writeSignedTinyRun(d, 64), d / "peers");
        const QStringList args{QStringLiteral("--steps"), QStringLiteral("8"), QStringLiteral("--min-peers"),
                               QStringLiteral("2")};
        // No monitor: the first trainer is the swarm's DHT bootstrap and has nobody to ask.
        const quint16 dhtPort = freeUdpPort(), bound = freeTcpPortPair(), nowhere = freeTcpPortPair();
        auto &first = h.startPeer(QStringLiteral("first"), QStringList(args)
                                                               << QStringLiteral("--dht-port") << QString::number(dhtPort)
                                                               << QStringLiteral("--port") << QString::number(bound)
                                                               << QStringLiteral("--announce")
                                                               << QStringLiteral("127.0.0.1:%1").arg(nowhere));
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return first.logText().contains(QStringLiteral("reachability unknown")); }, 60),
                     {&first});
        auto &second = h.startPeer(QStringLiteral("second"), QStringList(args)
                                                                 << QStringLiteral("--bootstrap")
                                                                 << QStringLiteral("127.0.0.1:%1").arg(dhtPort));
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&first, &second}); }, 240), {&first, &second});
        SWARM_VERIFY(first.logText().contains(QStringLiteral("the first peer able to check came only now")), {&first});
        // The second could not check with the first (its forward is broken) and has nobody else:
        // unsure, it stays reachable, as it is.
        SWARM_VERIFY(!second.logText().contains(QStringLiteral("client mode from now on")), {&second});
        const auto sf = byStep(first), ss = byStep(second);
        // The last steps come after the second check: averaged, the first reduces nothing, one model.
        for (long step = 7; step <= 8; ++step) {
            SWARM_VERIFY(sf.count(step) && ss.count(step), {&first, &second});
            SWARM_VERIFY(sf.at(step).value("averaged", false) && ss.at(step).value("averaged", false), {&first, &second});
            QCOMPARE(sf.at(step).value("shard_elements", -1L), 0L);
            QVERIFY(ss.at(step).value("shard_elements", 0L) > 0);
            QCOMPARE(sf.at(step).value("params_sha", std::string()), ss.at(step).value("params_sha", std::string()));
        }
    }
};

QTEST_GUILESS_MAIN(TestSwarmLateReachability)
#include "tst_swarmlatereachability.moc"
