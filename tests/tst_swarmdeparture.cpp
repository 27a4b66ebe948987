// A trainer that leaves (SIGTERM, as a volunteer's `dedloc ctl quit` or logout) while another one
// trains on (core/peer/SwarmControl.cpp, SwarmTrainerRole.cpp): the one left steps alone without
// waiting, neither for a group nor, at every step, for a state donor (alone, its state is the
// swarm's; before, each solo step waited three progress periods for a donor: 13 waits in 13 steps).
#include "SwarmHarness.h"
#include "SwarmTestCase.h"

#include <QTest>

using namespace dedloc;
using namespace dedloc::test;

class TestSwarmDeparture : public SwarmTestCase {
    Q_OBJECT

private Q_SLOTS:
    void theOneLeftStepsAloneWithoutWaiting()
    {
        const auto d = scratch();
        SwarmHarness h(m_app, writeSignedTinyRun(d, 32), d / "peers");
        auto &monitor = h.startMonitor();
        const long steps = 16;
        const QStringList args{QStringLiteral("--steps"), QString::number(steps), QStringLiteral("--min-peers"),
                               QStringLiteral("2"), QStringLiteral("--average-state-every"), QStringLiteral("0")};
        auto &p1 = h.startPeer(QStringLiteral("p1"), args);
        auto &p2 = h.startPeer(QStringLiteral("p2"), args);
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return p2.lastStep() >= 3; }, 120), {&p1, &p2, &monitor});
        p2.stopGracefully(30000);
        SWARM_VERIFY(!p2.running() && p2.process->exitCode() == 0, {&p2});
        const auto leftAt = p2.lastStep();
        const auto before = p1.logText().size();
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&p1}); }, 180), {&p1, &monitor});
        QCOMPARE(p1.lastStep(), steps);
        SWARM_VERIFY(steps - leftAt >= 8, {&p1, &p2}); // enough solo steps to tell
        // At most the step whose group search was under way when p2 left waits for it and, having
        // stepped without it, looks for a donor once; every later step goes on at once.
        const auto after = p1.logText().mid(before);
        // "no other peer at this epoch" is the solo step itself, taken at once: not a wait.
        const auto fellBack = after.count(QStringLiteral("fell back to local gradients"))
                              - after.count(QStringLiteral("fell back to local gradients: no other peer at this epoch"));
        const auto donorWaits = after.count(QStringLiteral("no donor to repair from"));
        qInfo("after p2 left at step %ld: %lld fallbacks, %lld donor waits in %ld solo steps", leftAt,
              static_cast<long long>(fellBack), static_cast<long long>(donorWaits), steps - leftAt);
        SWARM_VERIFY(fellBack <= 1 && donorWaits <= 1, {&p1});
    }
};

QTEST_GUILESS_MAIN(TestSwarmDeparture)
#include "tst_swarmdeparture.moc"
