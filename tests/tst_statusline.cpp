// The headless status line (core/face/StatusLine.h): every state, unknown values left out.
#include "face/StatusLine.h"

#include <QtTest>

using namespace dedloc;

namespace {

PeerSnapshot training()
{
    PeerSnapshot s;
    s.state = PeerState::Training;
    s.globalEpoch = 12;
    s.targetBatchSize = 64;
    s.swarmSamplesAccumulated = 40.7;
    s.etaSeconds = 3.2;
    s.swarmSamplesPerSecond = 396.14;
    s.trainers = 2;
    s.auxiliaries = 1;
    s.monitors = 1;
    s.localSamplesPerSecond = 198.04;
    s.session.samples = 388;
    s.shareOfSwarm = 0.5;
    s.lastLoss = 4.93;
    return s;
}

} // namespace

class TestStatusLine final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void lines_data()
    {
        QTest::addColumn<int>("variant");
        QTest::addColumn<QString>("expected");
        QTest::newRow("training")
            << 0
            << "Training | step 12 | batch 40/64 (64%), next in 3 s | swarm 396.1 samples/s, "
               "2 trainers, 1 auxiliary, 1 monitor | you 198.0 samples/s, 388 samples (50.0% of swarm) | loss 4.930";
        QTest::newRow("paused, no eta, no loss, one trainer")
            << 1
            << "Paused (a game is using the GPU) | step 12 | batch 40/64 (64%) | swarm 396.1 samples/s, "
               "1 trainer, 1 auxiliary, 1 monitor | you 198.0 samples/s, 388 samples (50.0% of swarm)";
        QTest::newRow("error") << 2 << "Error: cannot reach the bootstrap peers; check the network and press Resume";
        QTest::newRow("idle") << 3 << "Idle";
        QTest::newRow("long eta, batch overfull: no percentage over 100, no time to wait")
            << 4
            << "Averaging | step 12 | batch 70/64 (target reached) | swarm 396.1 samples/s, "
               "2 trainers, 1 auxiliary, 1 monitor | you 198.0 samples/s, 388 samples (50.0% of swarm) | loss 4.930";
        QTest::newRow("in client mode (found out or asked for); reachable says nothing")
            << 5
            << "Training | step 12 | batch 40/64 (64%), next in 3 s | swarm 396.1 samples/s, "
               "2 trainers, 1 auxiliary, 1 monitor | you 198.0 samples/s, 388 samples (50.0% of swarm) | loss 4.930 "
               "| client mode";
        QTest::newRow("compute utilisation known")
            << 6
            << "Training | step 12 | batch 40/64 (64%), next in 3 s | swarm 396.1 samples/s, "
               "2 trainers, 1 auxiliary, 1 monitor | you 198.0 samples/s, computing 96% of the time, 388 samples "
               "(50.0% of swarm) | loss 4.930";
        QTest::newRow("a monitor computes nothing: no figures of its own")
            << 7
            << "Training (monitor: recording metrics) | step 12 | batch 40/64 (64%), next in 3 s | swarm 396.1 "
               "samples/s, 2 trainers, 1 auxiliary, 1 monitor";
        QTest::newRow("peers of the run on another manifest version are named, not counted")
            << 8
            << "Training | step 12 | batch 40/64 (64%), next in 3 s | swarm 396.1 samples/s, "
               "2 trainers, 1 auxiliary, 1 monitor (3 peers on another manifest version) | you 198.0 samples/s, "
               "388 samples (50.0% of swarm) | loss 4.930";
    }

    void lines()
    {
        QFETCH(int, variant);
        QFETCH(QString, expected);
        auto s = training();
        if (variant == 1) {
            s.state = PeerState::Paused;
            s.stateDetail = "a game is using the GPU";
            s.etaSeconds = -1.0;
            s.lastLoss = -1.0;
            s.trainers = 1;
        } else if (variant == 2) {
            s.state = PeerState::Error;
            s.stateDetail = "cannot reach the bootstrap peers; check the network and press Resume";
        } else if (variant == 3) {
            s = PeerSnapshot{};
        } else if (variant == 4) {
            s.state = PeerState::Averaging;
            s.swarmSamplesAccumulated = 70.0;
            s.etaSeconds = 3720.0;
        } else if (variant == 5) {
            s.reachability = "client mode: other peers cannot connect to this machine (no answer)";
        } else if (variant == 6) {
            s.computeUtilisation = 0.9612;
        } else if (variant == 7) {
            s.role = PeerRole::Monitor;
            s.stateDetail = "monitor: recording metrics";
            s.localSamplesPerSecond = 0.0;
            s.session.samples = 0;
            s.shareOfSwarm = 0.0;
            s.lastLoss = -1.0;
        } else if (variant == 8) {
            s.otherVersionPeers = 3;
        }
        if (variant == 0)
            s.reachability = "reachable: peer 1a2b3c4d connected back to tcp://192.0.2.1:40001";
        QCOMPARE(QString::fromStdString(statusLine(s)), expected);
    }
};

QTEST_APPLESS_MAIN(TestStatusLine)
#include "tst_statusline.moc"
