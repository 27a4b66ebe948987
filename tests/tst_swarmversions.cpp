// Two versions of one run's manifest in one DHT (core/averaging/ManifestVersions.h): real
// `dedloc` processes on loopback. Two trainers hold the lead's manifest, a third one re-signed
// with half the learning rate under the same run id (as a lead who changed a hyperparameter and
// a volunteer who still has the old file). The gradients' layout is the same, so nothing but the
// fingerprint in the swarm's keys keeps the third out of the others' groups: it must train in a
// swarm of its own, and every side must say that peers of the run are on another version.
#include "SwarmHarness.h"
#include "SwarmTestCase.h"

#include <QTest>

using namespace dedloc;
using namespace dedloc::test;

class TestSwarmVersions : public SwarmTestCase {
    Q_OBJECT

  private Q_SLOTS:
    void peersOnAnotherManifestVersionNeverAverageTogether()
    {
        const auto d = scratch();
        std::filesystem::create_directories(d / "lead");
        std::filesystem::create_directories(d / "older");
        const auto lead = writeSignedTinyRun(d / "lead", 32);
        const auto older = writeSignedTinyRun(d / "older", 32, [](RunManifest &m) { m.optimizer.learningRate *= 0.5; });
        SwarmHarness h(m_app, lead, d / "peers");
        auto &monitor = h.startMonitor();
        // Long enough for two checks of the versions (the first ~5 s after the start, then every 30 s).
        const QStringList args{QStringLiteral("--duration"), QStringLiteral("40")};
        auto &a1 = h.startPeer(QStringLiteral("a1"), args);
        auto &a2 = h.startPeer(QStringLiteral("a2"), args);
        auto &b = h.startPeer(QStringLiteral("b"), QStringList(args) << QStringLiteral("--manifest")
                                                                     << QString::fromStdString(older.string()));
        const auto all = {&a1, &a2, &b, &monitor};
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&a1, &a2, &b}); }, 150), all);
        const auto sa1 = byStep(a1), sa2 = byStep(a2), sb = byStep(b);
        SWARM_VERIFY(sa1.size() >= 3 && sa2.size() >= 3 && sb.size() >= 3, all);
        // The lead's version: averaged in pairs, one model; never a group of three. One model once
        // the two first agree, by the periodic state rounds (epochs 9, 19) at the latest: a1 and a2 start
        // together, and when each steps its first epochs before it sees the other's record, both
        // count as alone and neither asks for a repair, so the models may differ until then.
        long together = 0, agreedAt = -1;
        for (const auto &[step, e] : sa1) {
            SWARM_VERIFY(e.value("group_size", 0) <= 2, all);
            if (!sa2.count(step) || !e.value("averaged", false))
                continue;
            const auto mine = e.value("params_sha", std::string()), theirs = sa2.at(step).value("params_sha", std::string());
            if (agreedAt < 0 && mine == theirs)
                agreedAt = step;
            if (agreedAt >= 0) {
                ++together;
                QCOMPARE(mine, theirs);
            }
        }
        SWARM_VERIFY(agreedAt >= 0 && agreedAt <= 21 && together >= 2, all);
        // The other version: never in a group, so never the lead's model.
        for (const auto &[step, e] : sb) {
            SWARM_VERIFY(!e.value("averaged", false) && e.value("group_size", 0) <= 1, all);
            if (sa1.count(step))
                SWARM_VERIFY(e.value("params_sha", std::string()) != sa1.at(step).value("params_sha", std::string()),
                             all);
        }
        // Each side was told about the other: the lead's trainers of one peer (b), b of three
        // (two trainers and the monitor).
        const QString told = QStringLiteral(" under another version of its manifest");
        SWARM_VERIFY(a1.logText().contains(QStringLiteral("1 peer of this run trains") + told), all);
        SWARM_VERIFY(b.logText().contains(QStringLiteral("3 peers of this run train") + told), all);
    }
};

QTEST_GUILESS_MAIN(TestSwarmVersions)
#include "tst_swarmversions.moc"
