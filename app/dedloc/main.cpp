// dedloc: the volunteer's program. `dedloc --headless` trains without a window.
#include "LocalSwarm.h"
#include "net/PeerIdentity.h"
#include "run/RunPaths.h"
#include "security/RunTrust.h"
#include "swarm/SwarmPeer.h"
#include "train/TrainingSession.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"

#include <QCommandLineParser>
#include <QCoreApplication>

#include <QThread>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <unistd.h>

namespace {

// Set by SIGINT/SIGTERM; the session checks it between micro-batches and checkpoints on exit.
// A signal handler can reach only a static, lock-free flag.
std::atomic<bool> g_stop{false};

void onSignal(int)
{
    if (g_stop.exchange(true)) {
        constexpr char msg[] = "\ndedloc: second interrupt, exiting without a final checkpoint\n";
        (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
        std::_Exit(130);
    }
}

} // namespace

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("dedloc"));
    QCoreApplication::setApplicationVersion(QStringLiteral(DEDLOC_VERSION));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "DeDLOC Desktop: donate idle GPU/CPU time to a collaborative training run."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption headless(QStringLiteral("headless"), QStringLiteral("Train without a window."));
    const QCommandLineOption manifest(QStringLiteral("manifest"), QStringLiteral("Run manifest to join (default: the bundled run)."), QStringLiteral("file"));
    const QCommandLineOption dataDir(QStringLiteral("data-dir"), QStringLiteral("Identity and checkpoints (default: ~/.local/share/dedloc)."), QStringLiteral("dir"));
    const QCommandLineOption metricsOut(QStringLiteral("metrics-out"), QStringLiteral("Append one JSON line per step and validation to this file."), QStringLiteral("file"));
    const QCommandLineOption threads(QStringLiteral("threads"), QStringLiteral("Torch CPU threads (default: all cores)."), QStringLiteral("n"), QStringLiteral("0"));
    const QCommandLineOption cpu(QStringLiteral("cpu"), QStringLiteral("Train on the CPU even if a GPU is present."));
    const QCommandLineOption duration(QStringLiteral("duration"), QStringLiteral("Stop after this many seconds."), QStringLiteral("seconds"), QStringLiteral("0"));
    const QCommandLineOption steps(QStringLiteral("steps"), QStringLiteral("Stop at this optimizer step (default: the schedule's total)."), QStringLiteral("n"), QStringLiteral("0"));
    const QCommandLineOption fresh(QStringLiteral("fresh"), QStringLiteral("Start from step 0; existing checkpoints are left on disk but not loaded."));
    const QCommandLineOption leadKey(QStringLiteral("lead-key"), QStringLiteral("The run lead's public key (minisign format) to verify the manifest with (default: the installed key for the bundled run, else the key pinned on first join)."), QStringLiteral("file"));
    const QCommandLineOption allowUnsigned(QStringLiteral("allow-unsigned"), QStringLiteral("Development only: train on a run whose manifest is not signed or does not verify."));
    const QCommandLineOption printPeerKey(QStringLiteral("print-peer-key"), QStringLiteral("Print this peer's public key (64 hex digits, what a lead needs to issue an access token) and exit."));
    parser.addOptions({headless, manifest, dataDir, metricsOut, threads, cpu, duration, steps, fresh, leadKey, allowUnsigned, printPeerKey});
    auto opt = [](const char *name, const char *help, const char *value = nullptr, const char *def = nullptr) {
        return value ? QCommandLineOption(QString::fromLatin1(name), QString::fromLatin1(help), QString::fromLatin1(value),
                                          def ? QString::fromLatin1(def) : QString())
                     : QCommandLineOption(QString::fromLatin1(name), QString::fromLatin1(help));
    };
    const auto localSwarm = opt("local-swarm", "Start a local swarm: a monitor and N trainer processes on loopback.", "n");
    const auto metricsDir = opt("metrics-dir", "With --local-swarm: every peer's metrics as <name>.jsonl in this directory.", "dir");
    const auto solo = opt("solo", "Train alone, without the swarm (the foundation's single-peer session).");
    const auto role = opt("role", "trainer, auxiliary or monitor.", "role", "trainer");
    const auto name = opt("name", "Name shown in status lines.", "name");
    const auto bootstrap = opt("bootstrap", "DHT node to join (host:port); repeatable.", "host:port");
    const auto dhtPort = opt("dht-port", "UDP port of this peer's DHT node (default: any; local swarm: 31340).", "port");
    const auto host = opt("host", "Address this peer listens on and advertises.", "address", "127.0.0.1");
    const auto clientMode = opt("client-mode", "Behind NAT: connect out only (never leads, reduces no shard).");
    const auto bandwidth = opt("bandwidth", "Declared upload bandwidth in Mbit/s, for shard sizes.", "mbit");
    const auto microBatch = opt("micro-batch", "Samples per micro-batch (at most the manifest's).", "n", "0");
    const auto dataSeed = opt("data-seed", "Data order seed (default: from the peer key).", "n", "0");
    const auto progressPeriod = opt("progress-period", "Seconds between progress records.", "seconds", "1");
    const auto matchmakingTime = opt("matchmaking-time", "Seconds a group leader gathers at most.", "seconds", "5");
    const auto averageStateEvery = opt("average-state-every", "Average parameters and optimizer state every N epochs (0: never).", "n", "10");
    const auto swarmMetrics = opt("swarm-metrics-out", "Monitor: every peer's step metrics as JSON lines.", "file");
    const auto hashParameters = opt("hash-parameters", "Add params_sha (SHA-256 of the parameters) to step metrics.");
    const auto dumpParameters = opt("dump-parameters", "At exit, write the parameters as raw fp32 to this file.", "file");
    const auto senderTimeout = opt("sender-timeout", "All-reduce sender timeout (seconds).", "seconds", "15");
    const auto reducerTimeout = opt("reducer-timeout", "All-reduce reducer timeout (seconds).", "seconds", "30");
    const auto minPeers = opt("min-peers", "Do not step before this many peers average at the epoch.", "n", "1");
    parser.addOptions({localSwarm, metricsDir, solo, role, name, bootstrap, dhtPort, host, clientMode, bandwidth, microBatch,
                       dataSeed, progressPeriod, matchmakingTime, averageStateEvery, swarmMetrics, hashParameters,
                       dumpParameters, senderTimeout, reducerTimeout, minPeers});
    // parse() rather than process(): a bad option exits with 2 like every other bad input.
    if (!parser.parse(QCoreApplication::arguments())) {
        std::fprintf(stderr, "dedloc: %s (see --help)\n", qPrintable(parser.errorText()));
        return 2;
    }
    if (parser.isSet(QStringLiteral("help")))
        parser.showHelp(0);
    if (parser.isSet(QStringLiteral("version")))
        parser.showVersion();

    if (parser.isSet(printPeerKey)) {
        const auto dir = parser.isSet(dataDir) ? std::filesystem::path(parser.value(dataDir).toStdString())
                                               : dedloc::userDataDir();
        try {
            const auto identity = dedloc::PeerIdentity::loadOrCreate(dir / "identity.key");
            std::printf("%s\n", dedloc::toHex(identity.publicKey().data(), identity.publicKey().size()).c_str());
            dedloc::log::info("app", "peer id " + identity.peerId() + "; send the key above to the run's lead for an access token");
            return 0;
        } catch (const dedloc::Error &e) {
            std::fprintf(stderr, "dedloc: %s\n", e.what());
            return 2;
        }
    }

    dedloc::SessionOptions options;
    if (parser.isSet(manifest)) {
        options.manifest = parser.value(manifest).toStdString();
    } else if (auto found = dedloc::findDefaultManifest()) {
        options.manifest = *found;
    } else {
        std::fprintf(stderr, "dedloc: no run manifest given and the bundled default run was not found; use --manifest FILE\n");
        return 2;
    }
    options.dataDir = parser.isSet(dataDir) ? std::filesystem::path(parser.value(dataDir).toStdString())
                                            : dedloc::userDataDir();
    options.metricsOut = parser.value(metricsOut).toStdString();
    bool ok = true;
    options.threads = parser.value(threads).toInt(&ok);
    options.durationSeconds = ok ? parser.value(duration).toDouble(&ok) : 0;
    options.maxSteps = ok ? parser.value(steps).toLong(&ok) : 0;
    if (!ok || options.threads < 0 || options.durationSeconds < 0 || options.maxSteps < 0) {
        std::fprintf(stderr, "dedloc: --threads, --duration and --steps take non-negative numbers\n");
        return 2;
    }
    options.allowCuda = !parser.isSet(cpu);
    options.resume = !parser.isSet(fresh);

    // Nothing is trained from a run whose manifest is not signed by its lead (security/RunTrust.h).
    std::optional<std::filesystem::path> installedKey;
    std::error_code sameFileError;
    if (parser.isSet(leadKey))
        installedKey = parser.value(leadKey).toStdString();
    else if (const auto bundled = dedloc::findDefaultManifest(); bundled
             && std::filesystem::equivalent(*bundled, options.manifest, sameFileError)
             && std::filesystem::exists(bundled->parent_path() / "lead.pub"))
        installedKey = bundled->parent_path() / "lead.pub";
    try {
        const auto trust = dedloc::verifyRunManifest(options.manifest, options.dataDir / "trust", installedKey);
        dedloc::log::info("app", "run manifest verified: lead key " + trust.key.keyIdHex() + " (" + trust.anchor + ")");
    } catch (const dedloc::Error &e) {
        if (!parser.isSet(allowUnsigned)) {
            std::fprintf(stderr, "dedloc: %s\n", e.what());
            return 2;
        }
        dedloc::log::warning("app", std::string("--allow-unsigned: training anyway although ") + e.what());
    }

    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);

    if (parser.isSet(localSwarm)) {
        LocalSwarmOptions local;
        local.trainers = parser.value(localSwarm).toInt(&ok);
        if (!ok || local.trainers < 1 || local.trainers > 16) {
            std::fprintf(stderr, "dedloc: --local-swarm takes a number of trainers from 1 to 16\n");
            return 2;
        }
        local.dhtPort = static_cast<quint16>(parser.isSet(dhtPort) ? parser.value(dhtPort).toUInt(&ok) : 31340);
        local.dataDir = QString::fromStdString(options.dataDir.string());
        local.metricsDir = parser.value(metricsDir);
        local.peerArguments << QStringLiteral("--manifest") << QString::fromStdString(options.manifest.string());
        for (const auto *o : {&duration, &steps, &progressPeriod, &matchmakingTime, &averageStateEvery, &leadKey})
            if (parser.isSet(*o))
                local.peerArguments << QStringLiteral("--") + o->names().first() << parser.value(*o);
        for (const auto *o : {&cpu, &fresh, &hashParameters, &allowUnsigned})
            if (parser.isSet(*o))
                local.peerArguments << QStringLiteral("--") + o->names().first();
        return runLocalSwarm(local, g_stop);
    }

    dedloc::log::info("app", "Ctrl-C stops after the current micro-batch and saves a checkpoint");
    if (parser.isSet(solo))
        return dedloc::runTrainingSession(options, g_stop);

    if (!parser.isSet(headless))
        dedloc::log::info("app", "no window in this mode; training headless (--headless)");
    dedloc::SwarmOptions swarm;
    swarm.manifest = options.manifest;
    swarm.dataDir = options.dataDir;
    swarm.metricsOut = options.metricsOut;
    swarm.threads = options.threads;
    swarm.allowCuda = options.allowCuda;
    swarm.durationSeconds = options.durationSeconds;
    swarm.maxEpoch = options.maxSteps;
    swarm.resume = options.resume;
    swarm.name = parser.value(name).toStdString();
    const auto roleName = parser.value(role);
    if (roleName == QLatin1String("trainer"))
        swarm.role = dedloc::PeerRole::Trainer;
    else if (roleName == QLatin1String("auxiliary"))
        swarm.role = dedloc::PeerRole::Auxiliary;
    else if (roleName == QLatin1String("monitor"))
        swarm.role = dedloc::PeerRole::Monitor;
    else {
        std::fprintf(stderr, "dedloc: --role must be trainer, auxiliary or monitor\n");
        return 2;
    }
    for (const auto &b : parser.values(bootstrap))
        swarm.bootstrap.push_back(b.toStdString());
    swarm.dhtPort = static_cast<std::uint16_t>(parser.isSet(dhtPort) ? parser.value(dhtPort).toUInt(&ok) : 0);
    swarm.host = parser.value(host).toStdString();
    swarm.clientMode = parser.isSet(clientMode);
    if (swarm.clientMode && swarm.role != dedloc::PeerRole::Trainer) {
        std::fprintf(stderr, "dedloc: only trainers can run in client mode (auxiliary peers and monitors must be reachable)\n");
        return 2;
    }
    bool ok2 = true, ok3 = true, ok4 = true, ok5 = true, ok6 = true, ok7 = true, ok8 = true;
    swarm.bandwidth = parser.isSet(bandwidth) ? parser.value(bandwidth).toDouble(&ok2) : -1.0;
    swarm.microBatchSize = parser.value(microBatch).toInt(&ok3);
    swarm.dataSeed = parser.value(dataSeed).toULongLong(&ok4);
    swarm.progressPeriod = parser.value(progressPeriod).toDouble(&ok5);
    swarm.matchmaking.window = parser.value(matchmakingTime).toDouble(&ok6);
    swarm.averageStateEvery = parser.value(averageStateEvery).toLong(&ok7);
    swarm.senderTimeout = parser.value(senderTimeout).toDouble(&ok8);
    swarm.reducerTimeout = ok8 ? parser.value(reducerTimeout).toDouble(&ok8) : 0;
    const int minPeerCount = ok8 ? parser.value(minPeers).toInt(&ok8) : 0;
    swarm.minPeers = static_cast<std::size_t>(std::max(1, minPeerCount));
    if (!(ok && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && ok8) || swarm.microBatchSize < 0 || swarm.progressPeriod <= 0
        || swarm.matchmaking.window <= 0 || swarm.averageStateEvery < 0 || swarm.senderTimeout <= 0
        || swarm.reducerTimeout < swarm.senderTimeout) {
        std::fprintf(stderr, "dedloc: a swarm option has a bad value (see --help)\n");
        return 2;
    }
    swarm.swarmMetricsOut = parser.value(swarmMetrics).toStdString();
    swarm.hashParameters = parser.isSet(hashParameters);
    swarm.dumpParameters = parser.value(dumpParameters).toStdString();

    dedloc::SwarmPeer peer(swarm);
    peer.start();
    while (!g_stop.load()) {
        const auto state = peer.snapshot().state;
        if (state == dedloc::PeerState::Stopped || state == dedloc::PeerState::Error)
            break;
        QThread::msleep(100);
    }
    peer.stop();
    return peer.wait();
}
