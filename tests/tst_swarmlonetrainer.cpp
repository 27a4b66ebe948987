// A swarm down to one trainer beside its monitor (core/averaging/ProgressTracker.h, follow()):
// real `dedloc` processes on loopback. The monitor's own epoch is that of its last state (it
// keeps one every 5 epochs) and lags the trainer's; a trainer that joins must still take the
// lone trainer's epoch for the swarm's, download the state and step with it, not train apart
// from epoch 0 (which it did while the lagging monitor outvoted the lone trainer).
#include "SwarmHarness.h"
#include "SwarmTestCase.h"

#include <QTest>

using namespace dedloc;
using namespace dedloc::test;

class TestSwarmLoneTrainer : public SwarmTestCase {
    Q_OBJECT

private Q_SLOTS:
    void aJoinerTakesTheLoneTrainersEpoch()
    {
        const auto d = scratch();
        // Steps of 1024 samples (seconds each): the trainer must not outrun the joiner's download.
        SwarmHarness h(m_app, writeSignedTinyRun(d, 1024), d / "peers");
        auto &monitor = h.startMonitor();
        const QStringList args{QStringLiteral("--steps"), QStringLiteral("40"), QStringLiteral("--average-state-every"),
                               QStringLiteral("0")};
        auto &lone = h.startPeer(QStringLiteral("lone"), args);
        // Two epochs past the monitor's (0) before anyone joins: more than one, so only the
        // epoch the monitor follows can vouch for the lone trainer's.
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return lone.lastStep() >= 2; }, 120), {&lone, &monitor});
        SWARM_VERIFY(!monitor.logText().contains(QStringLiteral("downloaded state of epoch")), {&lone, &monitor});
        auto &joiner = h.startPeer(QStringLiteral("joiner"), args);
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return joiner.events().size() >= 2; }, 120), {&lone, &joiner, &monitor});
        for (auto *p : {&joiner, &lone})
            p->stopGracefully();
        SWARM_VERIFY(joiner.logText().contains(QStringLiteral("downloaded state of epoch")), {&joiner, &monitor});
        const auto sj = byStep(joiner), sl = byStep(lone);
        const long first = sj.begin()->first;
        SWARM_VERIFY(first >= 3, {&joiner, &lone, &monitor}); // it took the swarm's epoch, not 0
        const auto &e = sj.begin()->second;
        SWARM_VERIFY(e.value("averaged", false) && e.value("group_size", 0) == 2, {&joiner, &lone, &monitor});
        for (const auto &[step, j] : sj) // one model: the same parameters after every step both took
            if (sl.count(step))
                QCOMPARE(j.value("params_sha", std::string()), sl.at(step).value("params_sha", std::string()));
    }
};

QTEST_GUILESS_MAIN(TestSwarmLoneTrainer)
#include "tst_swarmlonetrainer.moc"
