#include "CommandLine.h"

#include "net/Announce.h"
#include "net/LocalAddress.h"
#include "run/RunPaths.h"

#include <QCommandLineParser>
#include <QCoreApplication>

#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

namespace {

// Torch threads a peer may ask for: more only starves the machine (and Ctrl-C waits for them).
constexpr double MaxThreads = 1024;

QCommandLineOption option(const char *name, const char *help, const char *value = nullptr, const char *fallback = nullptr)
{
    if (!value)
        return {QString::fromLatin1(name), QString::fromLatin1(help)};
    return {QString::fromLatin1(name), QString::fromLatin1(help), QString::fromLatin1(value),
            fallback ? QString::fromLatin1(fallback) : QString()};
}

int bad(const char *what)
{
    std::fprintf(stderr, "dedloc: %s (see --help)\n", what);
    return 2;
}

} // namespace

// "0,2" -> {0, 2}; "none" or "" -> {} (the CPU); anything else: nothing.
static std::optional<std::vector<int>> parseGpuList(const QString &text)
{
    std::vector<int> out;
    const QString t = text.trimmed();
    if (t.isEmpty() || t == QStringLiteral("none"))
        return out;
    for (const auto &part : t.split(QLatin1Char(','))) {
        bool good = false;
        const int index = part.trimmed().toInt(&good);
        if (!good || index < 0 || index > 63)
            return std::nullopt;
        out.push_back(index);
    }
    return out;
}

int CommandLine::parse(const QStringList &arguments)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("DeDLOC Desktop: donate idle GPU/CPU time to a collaborative training run."));
    p.addHelpOption();
    p.addVersionOption();
    const auto headless = option("headless", "No window: status lines on the terminal.");
    const auto manifest = option("manifest", "Run manifest to join (default: the bundled run).", "file");
    const auto dataDir = option("data-dir", "Identity and checkpoints (default: ~/.local/share/dedloc).", "dir");
    const auto metricsOut = option("metrics-out", "Append one JSON line per step to this file.", "file");
    const auto threads = option("threads", "Torch CPU threads (default: all cores; with --local-swarm: per peer, default 1).", "n", "0");
    const auto cpu = option("cpu", "Train on the CPU even if a GPU is present.");
    const auto gpusOpt = option("gpus", "Headless: the GPUs to train on, by index as the window lists them (e.g. 0,2; each micro-batch is split among them), or none for the CPU (default: 0).", "list", "0");
    const auto duration = option("duration", "Stop after this many seconds.", "seconds", "0");
    const auto steps = option("steps", "Stop at this global step (default: the schedule's total).", "n", "0");
    const auto fresh = option("fresh", "Start from step 0; existing checkpoints are left on disk but not loaded.");
    const auto localSwarmOpt = option("local-swarm", "Run a local swarm: a monitor and N trainers, each its own process.", "n");
    const auto metricsDir = option("metrics-dir", "With --local-swarm: each trainer's step metrics as <name>.jsonl here, and the monitor's record of the swarm as swarm.jsonl.", "dir");
    const auto soloOpt = option("solo", "Train alone, without the swarm.");
    const auto joinOpt = option("join", "With the window: join at once instead of waiting for the Join button.");
    const auto inTrayOpt = option("in-tray", "With the window: start in the system tray, the window hidden (as at login), where the desktop has a tray.");
    const auto startPausedOpt = option("start-paused", "Join paused: nothing is computed until Resume (window, tray, or `dedloc ctl resume`).");
    const auto role = option("role", "trainer, auxiliary or monitor.", "role", "trainer");
    const auto name = option("name", "Name shown in status lines.", "name");
    const auto bootstrap = option("bootstrap", "DHT node to join (host:port); repeatable.", "host:port");
    const auto dhtPort = option("dht-port", "UDP port of this peer's DHT node (default: any; local swarm: 31340).", "port");
    const auto host = option("host", "IPv4 address of this machine that this peer listens on (DHT and data plane) and advertises (default: 127.0.0.1, reached from this machine only). With peers on other machines: your LAN address (e.g. 192.168.1.11), or 0.0.0.0 with --client-mode.", "address", "127.0.0.1");
    const auto dataPort = option("port", "TCP port of this peer's all-reduce socket; its service socket (group joins, state downloads) uses port + 1. For a firewall rule or a port forward (default: any free ports).", "port");
    const auto announce = option("announce", "Reachable through a port forward on your router: advertise HOST (your public address or name) instead of --host, with PORT the router forwards to --port (PORT + 1 to --port + 1; default: the same ports). Binds every address (0.0.0.0) unless --host says otherwise.", "host[:port]");
    const auto noPortMapping = option("no-port-mapping", "Never ask the router for port mappings (UPnP-IGD, NAT-PMP); by default a peer on a LAN address asks, unless --announce or --client-mode.");
    const auto clientMode = option("client-mode", "Behind NAT: connect out only (never leads, reduces no shard). With --local-swarm: its trainers do, and its monitor reduces for them.");
    const auto bandwidth = option("bandwidth", "Upload bandwidth in Mbit/s for shard sizes until the first averaging round measures it (default: unknown, the others' mean).", "mbit");
    const auto microBatch = option("micro-batch", "Samples per micro-batch (at most the manifest's).", "n", "0");
    const auto dataSeed = option("data-seed", "Data order seed (default: from the peer key).", "n", "0");
    const auto progressPeriod = option("progress-period", "Seconds between progress records near a step.", "seconds", "1");
    const auto maxProgressPeriod = option("max-progress-period", "Longest seconds between progress records while the next step is far: 0 (the default) is 10 x --progress-period; at most 60; equal to --progress-period: a fixed period.", "seconds", "0");
    const auto matchmakingTime = option("matchmaking-time", "Seconds a group leader gathers at most.", "seconds", "5");
    const auto averageStateEvery = option("average-state-every", "Average parameters and optimizer state every N steps (0: never).", "n", "10");
    const auto reduce = option("reduce", "Monitor: also reduce shards in averaging rounds (weight 0) and lead groups, as an auxiliary peer does: what trainers in client mode need.");
    const auto swarmMetrics = option("swarm-metrics-out", "Monitor: every peer's step metrics as JSON lines.", "file");
    const auto evaluateEvery = option("evaluate-every", "Monitor: fine-tune the swarm's state on the run's downstream task every N steps (default: the manifest's; 0 there: never).", "n", "0");
    const auto hashParameters = option("hash-parameters", "Add params_sha (SHA-256 of the parameters) to step metrics.");
    const auto dumpParameters = option("dump-parameters", "At exit, write the parameters as raw fp32 to this file.", "file");
    const auto senderTimeout = option("sender-timeout", "All-reduce sender timeout (seconds).", "seconds", "15");
    const auto reducerTimeout = option("reducer-timeout", "All-reduce reducer timeout (seconds).", "seconds", "30");
    const auto minPeers = option("min-peers", "Neither compute nor step before this many peers (this one included) have been seen in the swarm (once; training goes on if some leave).", "n", "1");
    const auto statusEvery = option("status-interval", "Headless: seconds between status lines (0: none).", "seconds", "10");
    const auto screenshot = option("screenshot", "Save the window to this PNG after --screenshot-after seconds, then quit.", "file");
    const auto screenshotAfterOpt = option("screenshot-after", "Seconds before the screenshot.", "seconds", "30");
    const auto leadKeyOpt = option("lead-key", "The run lead's public key (minisign format) to verify the manifest with (default: the installed key for the bundled run, else the key pinned on first join).", "file");
    const auto allowUnsignedOpt = option("allow-unsigned", "Development only: train on a run whose manifest is not signed or does not verify.");
    const auto printPeerKeyOpt = option("print-peer-key", "Print this peer's public key (64 hex digits, what a lead needs to issue an access token) and exit.");
    const auto tokenOpt = option("token", "Closed runs: the access token file from the run's lead (default: <data dir>/runs/<run id>/access.token).", "file");
    p.addOptions({leadKeyOpt, allowUnsignedOpt, printPeerKeyOpt, tokenOpt, noPortMapping});
    p.addOptions({headless, manifest, dataDir, metricsOut, threads, cpu, gpusOpt, duration, steps, fresh, localSwarmOpt, metricsDir,
                  soloOpt, joinOpt, inTrayOpt, startPausedOpt, role, name, bootstrap, dhtPort, dataPort, host, announce, clientMode, bandwidth, microBatch, dataSeed,
                  progressPeriod, maxProgressPeriod, matchmakingTime, averageStateEvery, reduce, swarmMetrics, hashParameters, dumpParameters,
                  evaluateEvery, senderTimeout, reducerTimeout, minPeers, statusEvery, screenshot, screenshotAfterOpt});
    // parse() rather than process(): a bad option exits with 2 like every other bad input.
    if (!p.parse(arguments)) {
        std::fprintf(stderr, "dedloc: %s (see --help)\n", qPrintable(p.errorText()));
        return 2;
    }
    if (p.isSet(QStringLiteral("help"))) {
        std::printf("%s", qPrintable(p.helpText()));
        return 0;
    }
    if (p.isSet(QStringLiteral("version"))) {
        std::printf("dedloc %s\n", DEDLOC_VERSION);
        return 0;
    }

    auto &s = session;
    if (p.isSet(printPeerKeyOpt)) {
        printPeerKey = true;
        s.dataDir = p.isSet(dataDir) ? std::filesystem::path(p.value(dataDir).toStdString()) : dedloc::userDataDir();
        return -1;
    }
    if (p.isSet(leadKeyOpt)) {
        leadKey = p.value(leadKeyOpt).toStdString();
        std::error_code ec;
        if (!std::filesystem::is_regular_file(*leadKey, ec))
            return bad(("--lead-key: no such file: " + leadKey->string()).c_str());
    }
    allowUnsigned = p.isSet(allowUnsignedOpt);
    if (p.isSet(manifest)) {
        s.manifest = p.value(manifest).toStdString();
    } else if (auto found = dedloc::findDefaultManifest()) {
        s.manifest = *found;
    } else {
        return bad("no run manifest given and the bundled default run was not found; use --manifest FILE");
    }
    s.dataDir = p.isSet(dataDir) ? std::filesystem::path(p.value(dataDir).toStdString()) : dedloc::userDataDir();
    s.metricsOut = p.value(metricsOut).toStdString();
    bool ok = true;
    auto number = [&](const QCommandLineOption &o) {
        bool good = false;
        const double v = p.value(o).toDouble(&good);
        ok = ok && good && std::isfinite(v); // Qt reads "inf" and "nan" as numbers
        return v;
    };
    const double threadCount = number(threads);
    s.threads = threadCount >= 0 && threadCount <= MaxThreads ? static_cast<int>(threadCount) : -1;
    s.durationSeconds = number(duration);
    s.maxSteps = static_cast<long>(number(steps));
    if (!ok || s.threads < 0 || s.durationSeconds < 0 || s.maxSteps < 0)
        return bad("--threads, --duration and --steps take non-negative numbers (--threads at most 1024)");
    s.allowCuda = !p.isSet(cpu);
    s.resume = !p.isSet(fresh);
    solo = p.isSet(soloOpt);
    join = p.isSet(joinOpt);

    auto &w = swarm;
    w.manifest = s.manifest;
    w.dataDir = s.dataDir;
    w.metricsOut = s.metricsOut;
    w.threads = s.threads;
    w.allowCuda = s.allowCuda;
    if (const auto gpus = parseGpuList(p.value(gpusOpt)))
        w.gpus = *gpus;
    else
        return bad("--gpus takes GPU indices separated by commas (0,2) or none");
    w.durationSeconds = s.durationSeconds;
    w.maxEpoch = s.maxSteps;
    w.resume = s.resume;
    w.name = p.value(name).toStdString();
    if (p.isSet(tokenOpt)) {
        if (p.isSet(localSwarmOpt))
            return bad("--token is for one peer; a local swarm's peers each have their own data directory");
        w.accessTokenFile = p.value(tokenOpt).toStdString();
        std::error_code ec;
        if (!std::filesystem::is_regular_file(w.accessTokenFile, ec))
            return bad(("--token: no such file: " + w.accessTokenFile.string()).c_str());
    }
    const auto roleName = p.value(role);
    if (roleName == QLatin1String("trainer"))
        w.role = dedloc::PeerRole::Trainer;
    else if (roleName == QLatin1String("auxiliary"))
        w.role = dedloc::PeerRole::Auxiliary;
    else if (roleName == QLatin1String("monitor"))
        w.role = dedloc::PeerRole::Monitor;
    else
        return bad("--role must be trainer, auxiliary or monitor");
    for (const auto &b : p.values(bootstrap)) {
        const long bootstrapPort = dedloc::endpointPort(b.toStdString());
        if (b.lastIndexOf(QLatin1Char(':')) < 1 || bootstrapPort < 1 || bootstrapPort > 65535)
            return bad(("--bootstrap " + b.toStdString() + " is not HOST:PORT with a port from 1 to 65535 (e.g. "
                        "192.168.1.11:31340)").c_str());
        w.bootstrap.push_back(b.toStdString());
    }
    const double port = p.isSet(dhtPort) ? number(dhtPort) : 0;
    if (!ok || port < 0 || port > 65535)
        return bad("--dht-port takes a port number");
    w.dhtPort = static_cast<std::uint16_t>(port);
    w.host = p.value(host).toStdString();
    if (p.isSet(host))
        if (const auto problem = dedloc::hostBindProblem(w.host); !problem.empty())
            return bad(problem.c_str());
    w.clientMode = p.isSet(clientMode);
    w.mapPorts = !p.isSet(noPortMapping);
    if (p.isSet(dataPort)) {
        const double d = number(dataPort);
        if (!ok || d < 1 || d > 65534 || d != std::floor(d))
            return bad("--port takes a TCP port number from 1 to 65534 (the service uses port + 1)");
        if (w.clientMode)
            return bad("--port has no use in client mode: a client-mode peer binds no TCP port");
        if (p.isSet(localSwarmOpt))
            return bad("--port is for one peer; the peers of a local swarm each take free ports");
        w.allReducePort = static_cast<std::uint16_t>(d);
        w.servicePort = static_cast<std::uint16_t>(d + 1);
    }
    if (w.clientMode && w.role != dedloc::PeerRole::Trainer)
        return bad("only trainers can run in client mode (auxiliary peers and monitors must be reachable)");
    if (p.isSet(announce)) {
        if (w.clientMode)
            return bad("--announce and --client-mode exclude each other: a peer behind a port forward is reachable");
        if (p.isSet(localSwarmOpt))
            return bad("--announce is for one peer; the peers of a local swarm share this machine's address");
        w.announce = p.value(announce).toStdString();
        try { // checked now, before the run loads anything
            (void)dedloc::announcedEndpoints(w.announce, "tcp://0.0.0.0:1", "tcp://0.0.0.0:2");
        } catch (const std::exception &e) {
            return bad(e.what());
        }
        if (!p.isSet(host)) // a forward arrives on the LAN address, never on loopback
            w.host = "0.0.0.0";
        // The usual forward keeps the port number: without --port, bind the announced pair.
        const long forwarded = dedloc::endpointPort(w.announce);
        if (!p.isSet(dataPort) && forwarded <= 0)
            return bad(("--announce " + w.announce + " needs fixed ports for the router to forward: give --port PORT, "
                        "or --announce " + w.announce + ":PORT").c_str());
        if (!p.isSet(dataPort) && forwarded > 0) { // checked above: 1..65534
            w.allReducePort = static_cast<std::uint16_t>(forwarded);
            w.servicePort = static_cast<std::uint16_t>(forwarded + 1);
        }
    }
    // Refused here rather than when the peer starts, after the model has loaded. A local swarm
    // passes --host to its monitor, which is never in client mode.
    auto advertised = w;
    advertised.clientMode = w.clientMode && !p.isSet(localSwarmOpt);
    if (const auto problem = dedloc::advertisingProblem(advertised); !problem.empty())
        return bad(problem.c_str());
    w.monitorReduces = p.isSet(reduce);
    if (w.monitorReduces && w.role != dedloc::PeerRole::Monitor)
        return bad("--reduce is for a monitor (an auxiliary peer always reduces; a trainer reduces when reachable)");
    w.bandwidth = p.isSet(bandwidth) ? number(bandwidth) : -1.0;
    w.microBatchSize = static_cast<int>(number(microBatch));
    bool seedOk = false;
    w.dataSeed = p.value(dataSeed).toULongLong(&seedOk);
    ok = ok && seedOk;
    w.progressPeriod = number(progressPeriod);
    w.maxProgressPeriod = number(maxProgressPeriod);
    if (ok && w.maxProgressPeriod != 0 && !(w.maxProgressPeriod >= w.progressPeriod && w.maxProgressPeriod <= 60))
        return bad("--max-progress-period takes 0 (10 x --progress-period) or seconds from --progress-period to 60");
    w.matchmaking.window = number(matchmakingTime);
    w.averageStateEvery = static_cast<long>(number(averageStateEvery));
    w.evaluateEvery = static_cast<long>(number(evaluateEvery));
    w.senderTimeout = number(senderTimeout);
    w.reducerTimeout = number(reducerTimeout);
    const double minPeersValue = number(minPeers);
    w.minPeers = static_cast<std::size_t>(std::max(1.0, minPeersValue));
    statusInterval = number(statusEvery);
    screenshotAfter = number(screenshotAfterOpt);
    if (!ok || w.microBatchSize < 0 || w.progressPeriod <= 0 || w.maxProgressPeriod < 0 || w.matchmaking.window <= 0 || w.averageStateEvery < 0
        || w.evaluateEvery < 0 || w.senderTimeout <= 0 || w.reducerTimeout < w.senderTimeout || statusInterval < 0
        || screenshotAfter < 0 || minPeersValue < 1 || minPeersValue != std::floor(minPeersValue)
        || (p.isSet(bandwidth) && !(w.bandwidth > 0)))
        return bad("a swarm option has a bad value: numbers are wanted, with --min-peers a whole number of at least 1, "
                   "--bandwidth, --progress-period, --matchmaking-time and --sender-timeout above 0, --reducer-timeout at least "
                   "--sender-timeout, and --micro-batch, --max-progress-period, --average-state-every, --evaluate-every "
                   "and --status-interval not negative");
    w.swarmMetricsOut = p.value(swarmMetrics).toStdString();
    w.hashParameters = p.isSet(hashParameters);
    w.dumpParameters = p.value(dumpParameters).toStdString();
    screenshotPath = p.value(screenshot);
    startPaused = p.isSet(startPausedOpt);
    inTray = p.isSet(inTrayOpt);

    if (p.isSet(localSwarmOpt)) {
        localSwarmTrainers = p.value(localSwarmOpt).toInt(&ok);
        if (!ok || localSwarmTrainers < 1 || localSwarmTrainers > 16)
            return bad("--local-swarm takes a number of trainers from 1 to 16");
        localSwarm.trainers = localSwarmTrainers;
        if (p.isSet(dhtPort) && port == 0)
            return bad("--dht-port 0 with --local-swarm: its trainers need the monitor's port to find it; give a port number");
        localSwarm.dhtPort = static_cast<quint16>(p.isSet(dhtPort) ? port : 31340);
        localSwarm.dataDir = QString::fromStdString(s.dataDir.string());
        localSwarm.metricsDir = p.value(metricsDir);
        localSwarm.host = p.value(host);
        localSwarm.clientTrainers = w.clientMode;
        localSwarm.peerArguments << QStringLiteral("--manifest") << QString::fromStdString(s.manifest.string())
                                 << QStringLiteral("--host") << localSwarm.host;
        if (p.isSet(threads))
            localSwarm.threads = s.threads;
        for (const auto *o : {&duration, &steps, &progressPeriod, &maxProgressPeriod, &matchmakingTime, &averageStateEvery, &statusEvery, &leadKeyOpt,
                              &evaluateEvery, &minPeers, &bandwidth})
            if (p.isSet(*o))
                localSwarm.peerArguments << QStringLiteral("--") + o->names().constFirst() << p.value(*o);
        for (const auto *o : {&cpu, &fresh, &hashParameters, &allowUnsignedOpt, &noPortMapping})
            if (p.isSet(*o))
                localSwarm.peerArguments << QStringLiteral("--") + o->names().constFirst();
    }
    return -1;
}
