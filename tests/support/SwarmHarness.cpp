#include "SwarmHarness.h"

#include "TestSupport.h"
#include "security/Minisign.h"
#include "util/AtomicFile.h"

#include <QCoreApplication>
#include <QFile>
#include <QThread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

namespace dedloc::test {

namespace {

ClosedRun writeRun(const std::filesystem::path &dir, long targetBatchSize, bool closed)
{
    auto m = tinyRun(dir);
    m.training.targetBatchSize = targetBatchSize;
    m.compression = Compression::None;
    m.training.validationEveryNSteps = 1000;
    m.training.checkpointEveryNSteps = 1000;
    m.closed = closed;
    const auto path = dir / "manifest.json";
    std::ofstream(path) << toJson(m);
    const auto lead = minisign::generateKeyPair();
    writeFileAtomically(dir / "lead.pub", minisign::formatPublicKey(lead.publicKey));
    writeFileAtomically(path.string() + ".minisig", minisign::signFile(lead.secretKey, path, "tiny swarm run"));
    return {path, m.runId, lead.secretKey};
}

} // namespace

std::filesystem::path writeSignedTinyRun(const std::filesystem::path &dir, long targetBatchSize)
{
    return writeRun(dir, targetBatchSize, false).manifest;
}

ClosedRun writeSignedClosedTinyRun(const std::filesystem::path &dir, long targetBatchSize)
{
    return writeRun(dir, targetBatchSize, true);
}

quint16 freeUdpPort()
{
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

std::vector<nlohmann::json> SwarmPeerProcess::events(const char *event) const
{
    std::vector<nlohmann::json> out;
    std::ifstream in(metrics);
    std::string line;
    while (std::getline(in, line)) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_discarded() && j.value("event", std::string()) == event)
            out.push_back(std::move(j));
    }
    return out;
}

long SwarmPeerProcess::lastStep() const
{
    const auto steps = events();
    return steps.empty() ? 0 : steps.back().value("step", 0L);
}

QString SwarmPeerProcess::logText() const
{
    QFile f(QString::fromStdString(log.string()));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QString::fromUtf8(f.readAll());
}

bool SwarmPeerProcess::running() const
{
    if (!process)
        return false;
    // Without an event loop QProcess learns of the exit only inside a wait call.
    process->waitForFinished(0);
    return process->state() != QProcess::NotRunning;
}

void SwarmPeerProcess::kill9()
{
    if (running()) {
        ::kill(static_cast<pid_t>(process->processId()), SIGKILL);
        process->waitForFinished(10000);
    }
}

void SwarmPeerProcess::stopGracefully(int waitMs)
{
    if (running()) {
        process->terminate();
        if (!process->waitForFinished(waitMs))
            kill9();
    }
}

SwarmHarness::SwarmHarness(std::filesystem::path app, std::filesystem::path manifest, std::filesystem::path root)
    : m_app(std::move(app)), m_manifest(std::move(manifest)), m_root(std::move(root))
{
}

SwarmHarness::~SwarmHarness()
{
    for (auto &p : m_peers)
        p->kill9();
}

QStringList SwarmHarness::commonArguments() const
{
    return {QStringLiteral("--headless"), QStringLiteral("--manifest"), QString::fromStdString(m_manifest.string()),
            QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--progress-period"), QStringLiteral("0.3"),
            QStringLiteral("--matchmaking-time"), QStringLiteral("4"), QStringLiteral("--sender-timeout"),
            QStringLiteral("3"), QStringLiteral("--reducer-timeout"), QStringLiteral("6"),
            QStringLiteral("--hash-parameters"), QStringLiteral("--fresh")};
}

SwarmPeerProcess &SwarmHarness::launch(const QString &name, QStringList arguments)
{
    auto p = std::make_unique<SwarmPeerProcess>();
    p->name = name;
    p->dataDir = m_root / name.toStdString();
    std::filesystem::create_directories(p->dataDir);
    p->metrics = p->dataDir / "metrics.jsonl";
    p->log = p->dataDir / "log.txt";
    arguments << QStringLiteral("--name") << name << QStringLiteral("--data-dir") << QString::fromStdString(p->dataDir.string())
              << QStringLiteral("--metrics-out") << QString::fromStdString(p->metrics.string());
    p->process = std::make_unique<QProcess>();
    p->process->setProcessChannelMode(QProcess::MergedChannels);
    p->process->setStandardOutputFile(QString::fromStdString(p->log.string()));
    p->process->start(QString::fromStdString(m_app.string()), arguments);
    p->process->waitForStarted(10000);
    m_peers.push_back(std::move(p));
    return *m_peers.back();
}

SwarmPeerProcess &SwarmHarness::startMonitor(const QStringList &extra)
{
    m_dhtPort = freeUdpPort();
    auto args = commonArguments();
    args << QStringLiteral("--role") << QStringLiteral("monitor") << QStringLiteral("--dht-port") << QString::number(m_dhtPort)
         << QStringLiteral("--swarm-metrics-out") << QString::fromStdString((m_root / "swarm.jsonl").string()) << extra;
    auto &monitor = launch(QStringLiteral("monitor"), args);
    QThread::msleep(300);
    return monitor;
}

SwarmPeerProcess &SwarmHarness::startPeer(const QString &name, const QStringList &extra)
{
    auto args = commonArguments();
    args << QStringLiteral("--bootstrap") << QStringLiteral("127.0.0.1:%1").arg(m_dhtPort) << extra;
    return launch(name, args);
}

bool SwarmHarness::waitFor(const std::function<bool()> &condition, double seconds)
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
        if (condition())
            return true;
        QThread::msleep(100);
    }
    return condition();
}

} // namespace dedloc::test
