// A monitor that reduces follows the swarm through its rounds (core/peer/SwarmSupportRoles.cpp
// followRound): real `dedloc` processes on loopback, every trainer in client mode, so that no
// trainer serves a state or an update. The monitor, once a state round handed it the swarm's
// state, applies each complete round's average as the trainers do and holds their parameters at
// every step (params_sha in its round events) while it reduces the whole vector; a reachable
// trainer that joins late catches up from it (the only donor) and averages with the others
// within two epochs. Before, the monitor
// only took the state of the periodic state rounds, and a joiner had no donor of the current epoch.
#include "SwarmHarness.h"
#include "SwarmTestCase.h"
#include "TestSupport.h"

#include <QTest>

using namespace dedloc;
using namespace dedloc::test;

class TestMonitorFollows : public SwarmTestCase {
    Q_OBJECT

private Q_SLOTS:
    void theMonitorHoldsTheClientsStateAndAJoinerCatchesUpFromIt()
    {
        const auto d = scratch();
        SwarmHarness h(m_app, writeSignedTinyRun(d, 256), d / "peers");
        const QStringList stateEvery{QStringLiteral("--average-state-every"), QStringLiteral("4")};
        auto &monitor = h.startMonitor(QStringList(stateEvery) << QStringLiteral("--reduce"));
        const QStringList args = QStringList{QStringLiteral("--steps"), QStringLiteral("24")} + stateEvery;
        const QStringList clients = QStringList(args) << QStringLiteral("--min-peers") << QStringLiteral("4")
                                                      << QStringLiteral("--client-mode");
        auto &c1 = h.startPeer(QStringLiteral("c1"), clients);
        auto &c2 = h.startPeer(QStringLiteral("c2"), clients);
        auto &c3 = h.startPeer(QStringLiteral("c3"), clients);
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return byStep(c1).size() >= 10; }, 180), {&c1, &c2, &c3, &monitor});
        auto &joiner = h.startPeer(QStringLiteral("joiner"), args);
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&c1, &c2, &c3, &joiner}); }, 300),
                     {&c1, &c2, &c3, &joiner, &monitor});

        // The monitor holds the trainers' parameters after every round it followed. It follows
        // from the first state round (epoch 4) until the joiner comes: the joiner then reduces a
        // shard that the monitor (it sends nothing) never receives, and the joiner is a donor.
        const auto s1 = byStep(c1);
        long followed = 0;
        for (const auto &r : monitor.events("round")) {
            if (!r.value("followed", false))
                continue;
            ++followed;
            const long step = r.value("step", -1L);
            SWARM_VERIFY(s1.count(step) && s1.at(step).value("params_sha", std::string()) == r.value("params_sha", std::string("-")),
                         {&c1, &monitor});
        }
        SWARM_VERIFY(followed >= 5, {&c1, &monitor});
        SWARM_VERIFY(monitor.logText().contains(QStringLiteral("followed the swarm to epoch")), {&monitor});

        // The joiner took the swarm's state from the monitor, then averaged with the clients and
        // held their parameters from its second step on.
        const auto sj = byStep(joiner);
        SWARM_VERIFY(sj.size() >= 3, {&joiner, &monitor});
        const long first = sj.begin()->first;
        SWARM_VERIFY(first >= 10, {&joiner}); // it joined the swarm's epoch, not epoch 0
        long together = 0;
        for (const auto &[step, e] : sj) {
            if (step == first || !s1.count(step))
                continue;
            SWARM_VERIFY(e.value("averaged", false) && e.value("group_size", 0) >= 3, {&joiner, &c1});
            together += e.value("params_sha", std::string()) == s1.at(step).value("params_sha", std::string("-")) ? 1 : 0;
        }
        SWARM_VERIFY(together >= 2 && together + 2 >= static_cast<long>(sj.size()), {&joiner, &c1, &monitor});
        monitor.stopGracefully();
    }
};

QTEST_GUILESS_MAIN(TestMonitorFollows)
#include "tst_monitorfollows.moc"
