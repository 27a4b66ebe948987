// The swarm simulator (sim/SimSwarm.h) as a test of the swarm beyond one group: 16 light peers in
// one process, with the real control plane, matchmaking, all-reduce, group merging and model
// agreement on a synthetic model, in groups of at most 4. Hardly a step is taken alone (a peer
// whose search found no group); the epochs' groups merge into one model (some epoch ends with one
// model although it averaged in four groups); and a peer whose merge missed a group is repaired
// before its next step: nearly every step starts from the parameters the others start from.
#include "SimSwarm.h"

#include <QTest>

using namespace dedloc;
using namespace dedloc::sim;

class TestSwarmSim final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void sixteenPeersInGroupsOfFourStayOneModel()
    {
        SimSwarmConfig c;
        c.peers = 16;
        c.peer.runId = "sim-test";
        c.peer.elements = 20000;
        c.peer.samplesPerSecond = 20.0;
        c.peer.targetBatchSize = static_cast<long>(c.peers * 20 * 8); // a step about every 8 s
        c.peer.matchmaking.window = 2.0;
        c.peer.matchmaking.targetGroupSize = 4;
        c.seed = 7;
        SimSwarm swarm(c);
        swarm.start();
        swarm.run(60.0); // three full epochs, also when a late group costs one a state download
        swarm.stop();
        const auto r = swarm.report();
        QString epochs;
        for (const auto &[epoch, e] : r.epochs)
            epochs += QStringLiteral("epoch %1: %2 stepped (%3 from the common start), %4 alone, %5 merged, %6 model(s) "
                                     "after; ")
                          .arg(epoch).arg(e.stepped).arg(e.fromCommonStart).arg(e.alone).arg(e.merged).arg(e.digests);
        for (const auto &[epoch, e] : r.epochs)
            for (const auto &stray : e.strays)
                epochs += QStringLiteral("epoch %1 stray: %2; ").arg(epoch).arg(QString::fromStdString(stray));
        std::size_t full = 0, oneModel = 0, steps = 0, common = 0, alone = 0;
        for (const auto &[epoch, e] : r.epochs) {
            if (e.stepped * 10 < c.peers * 9)
                continue; // the last epoch, cut by the end of the run
            ++full;
            oneModel += e.digests == 1 && e.merged == e.stepped ? 1 : 0;
            steps += e.stepped;
            common += e.fromCommonStart;
            alone += e.alone;
        }
        QVERIFY2(full >= 3, qPrintable(epochs));
        QVERIFY2(alone * 20 <= steps, qPrintable(epochs));
        QVERIFY2(oneModel >= 1, qPrintable(epochs));
        QVERIFY2(common * 10 >= steps * 9, qPrintable(epochs));
    }
};

QTEST_GUILESS_MAIN(TestSwarmSim)
#include "tst_swarmsim.moc"
