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
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>

namespace dedloc::test {

namespace {

ClosedRun writeRun(const std::filesystem::path &dir, long targetBatchSize, bool closed, long validationEvery = 1000,
                   Compression codec = Compression::None, const std::function<void(RunManifest &)> &edit = {})
{
    auto m = tinyRun(dir);
    m.training.targetBatchSize = targetBatchSize;
    m.compression = codec;
    m.training.validationEveryNSteps = validationEvery;
    m.training.checkpointEveryNSteps = 1000;
    m.closed = closed;
    if (edit)
        edit(m);
    const auto path = dir / "manifest.json";
    std::ofstream(path) << toJson(m);
    const auto lead = minisign::generateKeyPair();
    writeFileAtomically(dir / "lead.pub", minisign::formatPublicKey(lead.publicKey));
    writeFileAtomically(path.string() + ".minisig", minisign::signFile(lead.secretKey, path, "tiny swarm run"));
    return {path, m.runId, lead.secretKey};
}

} // namespace

std::filesystem::path writeSignedTinyRun(const std::filesystem::path &dir, long targetBatchSize, long validationEvery,
                                         Compression codec)
{
    return writeRun(dir, targetBatchSize, false, validationEvery, codec).manifest;
}

std::filesystem::path writeSignedTinyRun(const std::filesystem::path &dir, long targetBatchSize,
                                         const std::function<void(RunManifest &)> &edit)
{
    return writeRun(dir, targetBatchSize, false, 1000, Compression::None, edit).manifest;
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

quint16 freeTcpPortPair()
{
    auto bindTcp = [](quint16 port, quint16 *bound) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(port);
        const bool ok = ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0;
        socklen_t len = sizeof a;
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
        if (bound)
            *bound = ntohs(a.sin_port);
        return fd < 0 ? -1 : (ok ? fd : (::close(fd), -1));
    };
    for (int attempt = 0; attempt < 100; ++attempt) {
        quint16 port = 0;
        const int first = bindTcp(0, &port);
        if (first < 0)
            continue;
        const int second = port < 65535 ? bindTcp(static_cast<quint16>(port + 1), nullptr) : -1;
        ::close(first);
        if (second >= 0) {
            ::close(second);
            return port;
        }
    }
    return 0;
}

std::vector<nlohmann::json> SwarmPeerProcess::events(const char *event) const
{
    return metricsEvents(metrics, event);
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

SwarmPeerProcess &SwarmHarness::launch(const QString &name, QStringList arguments, const std::filesystem::path &program)
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
    // A test that aborts (QtTest's watchdog, a crash) runs no destructor: its peers must not
    // train on for ever. The signal survives the exec of `ip netns exec` and of the peer.
    p->process->setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGKILL); });
    const std::filesystem::path &executable = program.empty() ? m_app : program;
    QStringList prefix = m_prefix ? m_prefix(name) : QStringList();
    if (prefix.isEmpty()) {
        p->process->start(QString::fromStdString(executable.string()), arguments);
    } else {
        const QString first = prefix.takeFirst();
        p->process->start(first, prefix << QString::fromStdString(executable.string()) << arguments);
    }
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

SwarmPeerProcess &SwarmHarness::startLeadServe(const std::filesystem::path &leadApp, const QStringList &extra)
{
    m_dhtPort = freeUdpPort();
    QStringList args{QStringLiteral("serve"),           QStringLiteral("--manifest"),
                     QString::fromStdString(m_manifest.string()), QStringLiteral("--dht-port"),
                     QString::number(m_dhtPort),        QStringLiteral("--status-port"),
                     QStringLiteral("0"),               QStringLiteral("--threads"),
                     QStringLiteral("1"),               QStringLiteral("--progress-period"),
                     QStringLiteral("0.3"),             QStringLiteral("--status-interval"),
                     QStringLiteral("0"),               QStringLiteral("--fresh"),
                     QStringLiteral("--metrics-dir"),   QString::fromStdString((m_root / "serve" / "metrics").string())};
    args << extra;
    auto &serve = launch(QStringLiteral("serve"), args, leadApp);
    QThread::msleep(300);
    return serve;
}

quint16 SwarmHarness::serveStatusPort(const SwarmPeerProcess &serve)
{
    const QString marker = QStringLiteral("status http://127.0.0.1:");
    const QString log = serve.logText();
    const auto at = log.indexOf(marker);
    if (at < 0)
        return 0;
    const auto end = log.indexOf(QLatin1Char('/'), at + marker.size());
    return static_cast<quint16>(log.mid(at + marker.size(), end - at - marker.size()).toUInt());
}

SwarmPeerProcess &SwarmHarness::startPeer(const QString &name, const QStringList &extra,
                                          const std::filesystem::path &program)
{
    auto args = commonArguments();
    if (m_dhtPort != 0) // no monitor started yet: the peer is the first of its swarm
        args << QStringLiteral("--bootstrap") << QStringLiteral("%1:%2").arg(m_bootstrapHost).arg(m_dhtPort);
    args << extra;
    return launch(name, args, program);
}

std::vector<nlohmann::json> SwarmHarness::recordedLines() const
{
    std::vector<nlohmann::json> lines;
    std::ifstream in(m_root / "swarm.jsonl");
    std::string line;
    while (std::getline(in, line)) {
        auto j = nlohmann::json::parse(line, nullptr, false); // a line being written
        if (j.is_object())
            lines.push_back(std::move(j));
    }
    return lines;
}

std::set<std::string> SwarmHarness::recordedPeers() const
{
    std::set<std::string> peers;
    for (const auto &j : recordedLines())
        peers.insert(j.value("peer_id", std::string()));
    return peers;
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

std::vector<nlohmann::json> metricsEvents(const std::filesystem::path &file, const char *event)
{
    std::vector<nlohmann::json> out;
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_object() && j.value("event", std::string()) == event)
            out.push_back(std::move(j));
    }
    return out;
}

long lastEpoch(const std::filesystem::path &file)
{
    long epoch = -1;
    for (const char *name : {"step", "catch_up"})
        for (const auto &e : metricsEvents(file, name))
            epoch = std::max(epoch, e.value("step", -1L));
    return epoch;
}

std::map<long, nlohmann::json> byStep(const SwarmPeerProcess &peer)
{
    std::map<long, nlohmann::json> out;
    for (auto &e : peer.events())
        out[e.value("step", -1L)] = e;
    return out;
}

bool finished(std::initializer_list<SwarmPeerProcess *> peers)
{
    for (auto *p : peers)
        if (p->running())
            return false;
    return true;
}

namespace {
std::string &failureContext()
{
    static std::string text;
    return text;
}
} // namespace

void setFailureContext(const std::string &text) { failureContext() = text; }

QString failureReport(std::initializer_list<SwarmPeerProcess *> peers)
{
    QString out;
    if (!failureContext().empty())
        std::fprintf(stderr, "%s\n", failureContext().c_str());
    for (auto *p : peers)
        std::fprintf(stderr, "\n===== %s log =====\n%s\n", qPrintable(p->name), qPrintable(p->logText()));
    for (auto *p : peers)
        out += QStringLiteral("\n--- %1 (last step %2, %3, exit code %4):\n%5")
                   .arg(p->name)
                   .arg(p->lastStep())
                   .arg(p->running() ? QStringLiteral("running") : QStringLiteral("ended"))
                   .arg(p->process ? p->process->exitCode() : -1)
                   .arg(p->logText().right(400));
    return out;
}

} // namespace dedloc::test
