#include "LocalSwarm.h"

#include <QCoreApplication>
#include <QDir>
#include <QThread>

#include <csignal>
#include <cstdio>

#include <sys/prctl.h>
#include <unistd.h>

LocalSwarm::LocalSwarm(LocalSwarmOptions options) : m_options(std::move(options)) {}

LocalSwarm::~LocalSwarm() { stopAll(); }

QString LocalSwarm::bootstrap() const { return QStringLiteral("%1:%2").arg(m_options.host).arg(m_options.dhtPort); }

std::unique_ptr<QProcess> LocalSwarm::startPeer(const QString &name, QStringList arguments)
{
    const QString dir = QDir(m_options.dataDir).filePath(QStringLiteral("local-swarm/") + name);
    QDir().mkpath(dir);
    arguments << QStringLiteral("--headless") << QStringLiteral("--name") << name << QStringLiteral("--data-dir") << dir
              << QStringLiteral("--threads") << QString::number(m_options.threads);
    arguments << m_options.peerArguments;
    auto p = std::make_unique<QProcess>();
    p->setProcessChannelMode(QProcess::ForwardedChannels);
    // Each peer in its own process group: a terminal's Ctrl-C (SIGINT to the foreground group)
    // reaches only this launcher, which then stops every peer once (stopAll). Had they got the
    // SIGINT too, stopAll's SIGTERM would be their second signal, which exits at once without
    // the final checkpoint. If the launcher itself dies, the kernel sends its peers SIGTERM.
    const pid_t launcher = ::getpid();
    p->setChildProcessModifier([launcher] {
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != launcher) // the launcher died before prctl
            ::raise(SIGTERM);
    });
    p->start(QCoreApplication::applicationFilePath(), arguments);
    if (!p->waitForStarted(10000)) {
        std::fprintf(stderr, "dedloc: could not start %s: %s\n", qPrintable(name), qPrintable(p->errorString()));
        return nullptr;
    }
    return p;
}

int LocalSwarm::start(int firstTrainerNumber)
{
    if (!m_options.metricsDir.isEmpty() && !QDir().mkpath(m_options.metricsDir)) {
        std::fprintf(stderr, "dedloc: cannot create the metrics directory %s\n", qPrintable(m_options.metricsDir));
        return 2;
    }
    QStringList monitorArgs{QStringLiteral("--role"), QStringLiteral("monitor"), QStringLiteral("--dht-port"),
                            QString::number(m_options.dhtPort)};
    if (m_options.clientTrainers)
        monitorArgs << QStringLiteral("--reduce");
    if (!m_options.metricsDir.isEmpty())
        monitorArgs << QStringLiteral("--swarm-metrics-out")
                    << QDir(m_options.metricsDir).filePath(QStringLiteral("swarm.jsonl"));
    auto monitor = startPeer(QStringLiteral("monitor"), monitorArgs);
    if (!monitor)
        return 1;
    m_peers.push_back(std::move(monitor));
    m_names.push_back(QStringLiteral("monitor"));
    std::printf("local swarm: monitor and DHT bootstrap node on udp %s; add a peer from another terminal with\n"
                "  ./dedloc.sh join --bootstrap %s\n",
                qPrintable(bootstrap()), qPrintable(bootstrap()));
    std::fflush(stdout);
    QThread::msleep(1500); // let the bootstrap node bind before the trainers ask it
    m_peers.front()->waitForFinished(0);
    if (m_peers.front()->state() == QProcess::NotRunning) {
        std::fprintf(stderr, "dedloc: the monitor exited at once (is udp port %d in use? choose another with --dht-port)\n",
                     m_options.dhtPort);
        return 2;
    }
    for (int i = 0; i < m_options.trainers; ++i) {
        QStringList trainerArgs{QStringLiteral("--role"), QStringLiteral("trainer"), QStringLiteral("--bootstrap"), bootstrap()};
        if (m_options.clientTrainers)
            trainerArgs << QStringLiteral("--client-mode");
        const QString name = QStringLiteral("trainer-%1").arg(firstTrainerNumber + i);
        if (!m_options.metricsDir.isEmpty()) // step metrics: the monitor takes no steps (its record is swarm.jsonl)
            trainerArgs << QStringLiteral("--metrics-out") << QDir(m_options.metricsDir).filePath(name + QStringLiteral(".jsonl"));
        auto p = startPeer(name, trainerArgs);
        if (!p) {
            stopAll();
            return 1;
        }
        m_peers.push_back(std::move(p));
        m_names.push_back(name);
    }
    return 0;
}

int LocalSwarm::wait(const std::atomic<bool> &stop)
{
    int code = 0;
    m_reported.assign(m_peers.size(), false);
    while (!stop.load()) {
        bool trainersRunning = false;
        for (std::size_t i = 1; i < m_peers.size(); ++i) {
            m_peers[i]->waitForFinished(i == 1 ? 200 : 0);
            if (m_peers[i]->state() != QProcess::NotRunning) {
                trainersRunning = true;
                continue;
            }
            reportEnd(i);
            if (m_peers[i]->exitCode() != 0 && code == 0)
                code = m_peers[i]->exitCode();
        }
        m_peers.front()->waitForFinished(0);
        if (!trainersRunning || m_peers.front()->state() == QProcess::NotRunning)
            break;
    }
    if (!stop.load() && m_peers.front()->state() == QProcess::NotRunning)
        reportEnd(0);
    stopAll();
    return code;
}

void LocalSwarm::reportEnd(std::size_t i)
{
    const auto &p = *m_peers[i];
    if (m_reported[i] || (p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0))
        return; // a peer that reached its --duration says so itself
    m_reported[i] = true;
    const QString how = p.exitStatus() == QProcess::CrashExit ? QStringLiteral("was killed or crashed")
                                                              : QStringLiteral("exited with code %1").arg(p.exitCode());
    std::fprintf(stderr, "local swarm: %s %s (see its log above); %s\n", qPrintable(m_names[i]), qPrintable(how),
                 i == 0 ? "stopping the trainers" : "the other peers go on");
    std::fflush(stderr);
}

void LocalSwarm::stopAll()
{
    // SIGTERM: each peer leaves after its micro-batch and checkpoints. Trainers first, so the
    // monitor (their bootstrap node and donor) goes last.
    for (std::size_t i = m_peers.size(); i-- > 0;)
        if (m_peers[i] && m_peers[i]->state() != QProcess::NotRunning)
            m_peers[i]->terminate();
    for (auto &p : m_peers)
        if (p && !p->waitForFinished(60000))
            p->kill();
    m_peers.clear();
    m_names.clear();
}
