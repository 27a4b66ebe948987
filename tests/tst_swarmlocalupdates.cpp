// Local-update mode end to end (DiLoCo in the swarm; core/train/OuterOptimizer.h): two `dedloc`
// processes on loopback train a tiny run whose manifest asks for local updates, then a third
// joins late. Every outer step is averaged and leaves the members bitwise identical, with no
// periodic state round (the outer step keeps the anchors together); the joiner downloads the
// anchor and the outer momentum and takes part in the next outer step with the same parameters.
// With delayed parameter updates too, and sparse pseudo-gradients (topk4bit, error feedback),
// the outer steps overlap the inner ones and the anchors still agree.
#include "SwarmHarness.h"
#include "SwarmTestCase.h"

#include <QTest>

using namespace dedloc;
using namespace dedloc::test;

class TestSwarmLocalUpdates : public SwarmTestCase {
    Q_OBJECT

private Q_SLOTS:
    void outerStepsKeepPeersIdenticalAndAJoinerCatchesUp()
    {
        const auto d = scratch();
        // Outer steps of 512 samples (seconds each, inner steps of 16): the swarm must not
        // outrun the joiner's download, as real outer steps (many minutes) never do.
        const auto manifest = writeSignedTinyRun(d, 512, [](RunManifest &m) {
            AveragingSpec a;
            a.mode = AveragingMode::LocalUpdates;
            a.innerBatchSize = 16;
            m.averagingField = a;
        });
        SwarmHarness h(m_app, manifest, d / "peers");
        auto &monitor = h.startMonitor();
        // A state round every 2 epochs would run in gradients mode: here none may.
        const QStringList args{QStringLiteral("--steps"), QStringLiteral("60"), QStringLiteral("--average-state-every"),
                               QStringLiteral("2")};
        const QStringList two = QStringList(args) << QStringLiteral("--min-peers") << QStringLiteral("2");
        auto &p1 = h.startPeer(QStringLiteral("p1"), two);
        auto &p2 = h.startPeer(QStringLiteral("p2"), two);
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return p1.lastStep() >= 3 && p2.lastStep() >= 3; }, 150),
                     {&p1, &p2, &monitor});
        auto &late = h.startPeer(QStringLiteral("late"), args);
        // Three steps: outer steps of a second here, so the joiner may be overtaken once more while
        // it replays (its samples of that epoch dropped), as two runs of the full suite saw.
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return late.events().size() >= 3; }, 150), {&p1, &p2, &late, &monitor});
        for (auto *p : {&late, &p1, &p2})
            p->stopGracefully();
        const auto s1 = byStep(p1), s2 = byStep(p2), sl = byStep(late);
        long together = 0;
        for (const auto &[step, e1] : s1) {
            SWARM_VERIFY(!e1.value("state_round", false), {&p1, &p2});
            if (!s2.count(step))
                continue;
            const auto &e2 = s2.at(step);
            SWARM_VERIFY(e1.value("averaged", false) && e2.value("averaged", false), {&p1, &p2});
            SWARM_VERIFY(e1.value("params_sha", std::string()) == e2.value("params_sha", std::string()), {&p1, &p2});
            ++together;
        }
        SWARM_VERIFY(together >= 3, {&p1, &p2});
        SWARM_VERIFY(late.logText().contains(QStringLiteral("downloaded state of epoch")), {&late});
        const long first = sl.begin()->first;
        SWARM_VERIFY(first >= 4, {&late}); // it never restarted the run from step 0
        const auto &joined = sl.begin()->second;
        SWARM_VERIFY(joined.value("averaged", false) && joined.value("group_size", 0) == 3, {&p1, &p2, &late});
        // It computed inner steps of its own (its first step may have come before any).
        SWARM_VERIFY(std::any_of(sl.begin(), sl.end(), [](const auto &e) { return e.second.value("samples", 0L) > 0; }),
                     {&late});
        QVERIFY(s1.count(first));
        QCOMPARE(joined.value("params_sha", std::string()), s1.at(first).value("params_sha", std::string()));
    }

    void overlappedOuterStepsKeepTheAnchorsIdentical()
    {
        // Local updates with delayed parameter updates and sparse pseudo-gradients: the rounds
        // run beside the next inner steps, each member sends its top-k and keeps the rest. The
        // anchors (params_sha in this mode) agree after every outer step, and each member
        // computed while its rounds ran.
        const auto d = scratch() / "overlapped";
        std::filesystem::create_directories(d);
        const auto manifest = writeSignedTinyRun(d, 256, [](RunManifest &m) {
            AveragingSpec a;
            a.mode = AveragingMode::LocalUpdates;
            a.innerBatchSize = 16;
            a.delayedParameterUpdates = true;
            m.averagingField = a;
            m.compression = Compression::TopK4Bit;
        });
        SwarmHarness h(m_app, manifest, d / "peers");
        auto &monitor = h.startMonitor();
        const long steps = 6;
        const QStringList args{QStringLiteral("--steps"), QString::number(steps), QStringLiteral("--min-peers"),
                               QStringLiteral("3")};
        auto &p1 = h.startPeer(QStringLiteral("p1"), args);
        auto &p2 = h.startPeer(QStringLiteral("p2"), args);
        auto &p3 = h.startPeer(QStringLiteral("p3"), args);
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&p1, &p2, &p3}); }, 180), {&p1, &p2, &p3, &monitor});
        const auto s1 = byStep(p1), s2 = byStep(p2), s3 = byStep(p3);
        long overlap[3] = {0, 0, 0};
        for (long step = 1; step <= steps; ++step) {
            SWARM_VERIFY(s1.count(step) && s2.count(step) && s3.count(step), {&p1, &p2, &p3});
            const auto sha = s1.at(step).value("params_sha", std::string());
            int i = 0;
            for (const auto *s : {&s1, &s2, &s3}) {
                const auto &e = s->at(step);
                SWARM_VERIFY(e.value("params_sha", std::string()) == sha && !sha.empty(), {&p1, &p2, &p3});
                SWARM_VERIFY(e.value("group_size", 0) == 3 && e.value("applied", false), {&p1, &p2, &p3});
                overlap[i++] += e.value("overlap_samples", 0L);
            }
        }
        for (long o : overlap)
            SWARM_VERIFY(o > 0, {&p1, &p2, &p3});
    }
};

QTEST_GUILESS_MAIN(TestSwarmLocalUpdates)
#include "tst_swarmlocalupdates.moc"
