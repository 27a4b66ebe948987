// Delayed parameter updates end to end (core/peer/SwarmDelayedStep.cpp): three `dedloc`
// processes on loopback train a tiny run whose manifest asks for them. Every step is averaged
// by all three, which hold bitwise the same parameters after it, state rounds included; the
// peers computed samples of the next step while rounds ran; every step reports the share of
// wall time spent computing.
#include "SwarmHarness.h"
#include "SwarmTestCase.h"

#include <QTest>

using namespace dedloc;
using namespace dedloc::test;

class TestSwarmDelayedStep : public SwarmTestCase {
    Q_OBJECT

private Q_SLOTS:
    void threePeersOverlapAndStayIdentical()
    {
        const auto d = scratch();
        const auto manifest = writeSignedTinyRun(d, 64, [](RunManifest &m) { m.averagingField = AveragingSpec{true}; });
        SwarmHarness h(m_app, manifest, d / "peers");
        auto &monitor = h.startMonitor();
        const long steps = 6;
        const QStringList args{QStringLiteral("--steps"), QString::number(steps), QStringLiteral("--min-peers"),
                               QStringLiteral("3"), QStringLiteral("--average-state-every"), QStringLiteral("3")};
        auto &p1 = h.startPeer(QStringLiteral("p1"), args);
        auto &p2 = h.startPeer(QStringLiteral("p2"), args);
        auto &p3 = h.startPeer(QStringLiteral("p3"), args);
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&p1, &p2, &p3}); }, 180), {&p1, &p2, &p3, &monitor});
        for (const auto *p : {&p1, &p2, &p3})
            QCOMPARE(p->process->exitCode(), 0);
        const auto s1 = byStep(p1), s2 = byStep(p2), s3 = byStep(p3);
        long overlap[3] = {0, 0, 0};
        bool stateRound = false;
        for (long step = 1; step <= steps; ++step) {
            SWARM_VERIFY(s1.count(step) && s2.count(step) && s3.count(step), {&p1, &p2, &p3});
            const auto sha = s1.at(step).value("params_sha", std::string());
            QVERIFY(!sha.empty());
            int i = 0;
            for (const auto *s : {&s1, &s2, &s3}) {
                const auto &e = s->at(step);
                SWARM_VERIFY(e.value("params_sha", std::string()) == sha, {&p1, &p2, &p3});
                SWARM_VERIFY(e.value("group_size", 0) == 3 && e.value("complete", false), {&p1, &p2, &p3});
                QVERIFY(e.value("applied", false));
                // Every step a peer computed for was a delayed one; a peer that computed nothing for
                // a step (slower to start, on a loaded machine) takes it without a gradient of its own.
                QVERIFY2(e.contains("overlap_samples") || e.value("samples", -1L) == 0,
                         qPrintable(QString::fromStdString(e.dump())));
                overlap[i++] += e.value("overlap_samples", 0L);
                const double u = e.value("utilisation", -1.0);
                QVERIFY2(u >= 0.0 && u <= 1.0, qPrintable(QString::fromStdString(e.dump())));
                stateRound = stateRound || e.value("state_round", false);
            }
        }
        // The periodic state rounds (after steps 3 and 6) found the three in one state, each
        // having applied the same complete averages: both were left out, by every member, and the
        // parameters stayed identical (above) without moving the state.
        QVERIFY(!stateRound);
        for (const auto *p : {&p1, &p2, &p3})
            SWARM_VERIFY(p->logText().count(QStringLiteral("3 members of group")) == 2
                             && p->logText().count(QStringLiteral("joined with the same state")) == 2,
                         {&p1, &p2, &p3});
        for (long o : overlap)
            SWARM_VERIFY(o > 0, {&p1, &p2, &p3}); // each computed while its rounds ran
    }
};

QTEST_GUILESS_MAIN(TestSwarmDelayedStep)
#include "tst_swarmdelayedstep.moc"
