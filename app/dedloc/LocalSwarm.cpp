#include "LocalSwarm.h"

#include <QCoreApplication>
#include <QDir>
#include <QProcess>
#include <QThread>

#include <cstdio>
#include <memory>
#include <vector>

namespace {

std::unique_ptr<QProcess> startPeer(const QString &name, QStringList arguments, const LocalSwarmOptions &o)
{
    const QString dir = QDir(o.dataDir).filePath(QStringLiteral("local-swarm/") + name);
    QDir().mkpath(dir);
    arguments << QStringLiteral("--headless") << QStringLiteral("--name") << name << QStringLiteral("--data-dir") << dir
              << QStringLiteral("--threads") << QStringLiteral("1");
    if (!o.metricsDir.isEmpty())
        arguments << QStringLiteral("--metrics-out") << QDir(o.metricsDir).filePath(name + QStringLiteral(".jsonl"));
    arguments << o.peerArguments;
    auto p = std::make_unique<QProcess>();
    p->setProcessChannelMode(QProcess::ForwardedChannels);
    p->start(QCoreApplication::applicationFilePath(), arguments);
    if (!p->waitForStarted(10000)) {
        std::fprintf(stderr, "dedloc: could not start %s: %s\n", qPrintable(name), qPrintable(p->errorString()));
        return nullptr;
    }
    return p;
}

void stopAll(std::vector<std::unique_ptr<QProcess>> &peers)
{
    for (auto &p : peers)
        if (p && p->state() != QProcess::NotRunning)
            p->terminate(); // SIGTERM: the peer leaves after its micro-batch and checkpoints
    for (auto &p : peers)
        if (p && !p->waitForFinished(60000))
            p->kill();
}

} // namespace

int runLocalSwarm(const LocalSwarmOptions &o, const std::atomic<bool> &stop)
{
    if (!o.metricsDir.isEmpty() && !QDir().mkpath(o.metricsDir)) {
        std::fprintf(stderr, "dedloc: cannot create the metrics directory %s\n", qPrintable(o.metricsDir));
        return 2;
    }
    const QString bootstrap = QStringLiteral("127.0.0.1:%1").arg(o.dhtPort);
    std::vector<std::unique_ptr<QProcess>> peers;
    QStringList monitorArgs{QStringLiteral("--role"), QStringLiteral("monitor"), QStringLiteral("--dht-port"),
                            QString::number(o.dhtPort)};
    if (!o.metricsDir.isEmpty())
        monitorArgs << QStringLiteral("--swarm-metrics-out") << QDir(o.metricsDir).filePath(QStringLiteral("swarm.jsonl"));
    peers.push_back(startPeer(QStringLiteral("monitor"), monitorArgs, o));
    if (!peers.back())
        return 1;
    std::printf("local swarm: monitor and DHT bootstrap node on udp %s; add a peer from another terminal with\n"
                "  ./dedloc.sh join --bootstrap %s\n",
                qPrintable(bootstrap), qPrintable(bootstrap));
    std::fflush(stdout);
    QThread::msleep(1500); // let the bootstrap node bind before the trainers ask it
    if (peers.front()->state() == QProcess::NotRunning) {
        std::fprintf(stderr, "dedloc: the monitor exited at once (is udp port %d in use? choose another with --dht-port)\n",
                     o.dhtPort);
        return 2;
    }
    for (int i = 1; i <= o.trainers; ++i) {
        peers.push_back(startPeer(QStringLiteral("trainer-%1").arg(i),
                                  {QStringLiteral("--role"), QStringLiteral("trainer"), QStringLiteral("--bootstrap"), bootstrap},
                                  o));
        if (!peers.back()) {
            stopAll(peers);
            return 1;
        }
    }
    int code = 0;
    while (!stop.load()) {
        bool trainersRunning = false;
        for (std::size_t i = 1; i < peers.size(); ++i) {
            peers[i]->waitForFinished(i == 1 ? 200 : 0);
            if (peers[i]->state() != QProcess::NotRunning)
                trainersRunning = true;
            else if (peers[i]->exitCode() != 0)
                code = peers[i]->exitCode();
        }
        if (!trainersRunning || peers.front()->state() == QProcess::NotRunning)
            break;
    }
    stopAll(peers);
    return code;
}
