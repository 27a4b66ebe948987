#include "ServeCommand.h"

#include "monitor/CheckpointArchive.h"
#include "net/Announce.h"
#include "monitor/ServeStatus.h"
#include "monitor/StatusHttpServer.h"
#include "run/RunManifest.h"
#include "run/RunPaths.h"
#include "security/RunTrust.h"
#include "face/StatusLine.h"
#include "monitor/SwarmMetricsRecorder.h"
#include "peer/SwarmPeer.h"
#include "util/Error.h"
#include "util/Log.h"
#include "util/Clock.h"

#include <QCommandLineParser>

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <optional>
#include <thread>

namespace dedloc::lead {

namespace {

namespace fs = std::filesystem;

// Set by SIGINT/SIGTERM (systemd stops the service with SIGTERM): the monitor leaves cleanly.
std::atomic<bool> g_stop{false};

void onSignal(int /*signal*/)
{
    g_stop = true;
}


int bad(const std::string &why)
{
    std::fprintf(stderr, "dedloc-lead serve: %s\n", why.c_str());
    return 2;
}

struct ServeConfig {
    SwarmOptions swarm;
    std::optional<fs::path> leadKey;
    bool allowUnsigned = false;
    fs::path metricsDir;
    StatusHttpOptions http;
    bool httpEnabled = true;
    double statusInterval = 60.0;
};

// Returns -1 to go on, or an exit code.
int parse(const QStringList &args, ServeConfig &c)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Run the lead's bootstrap node and monitor: the DHT entry point, every peer's metrics as JSON lines and CSV, "
        "the latest states kept as checkpoints, state donor of last resort, and a read-only JSON status over HTTP."));
    p.addHelpOption();
    auto opt = [](const char *name, const char *help, const char *value = nullptr, const char *fallback = nullptr) {
        if (!value)
            return QCommandLineOption(QString::fromLatin1(name), QString::fromLatin1(help));
        return QCommandLineOption(QString::fromLatin1(name), QString::fromLatin1(help), QString::fromLatin1(value),
                                  fallback ? QString::fromLatin1(fallback) : QString());
    };
    const auto manifest = opt("manifest", "Run manifest (default: the bundled run).", "file");
    const auto leadKey = opt(
        "lead-key",
        "Lead public key to verify the manifest with (default: installed, pinned, or lead.pub beside it on first use).",
        "file");
    const auto allowUnsigned = opt("allow-unsigned", "Development only: serve a run whose manifest does not verify.");
    const auto dataDir =
        opt("data-dir", "Identity, the monitor's checkpoints and kept states (default: ~/.local/share/dedloc/serve).",
            "dir");
    const auto host = opt("host", "An address of this machine that volunteers reach: the DHT node and the state donor bind it and the donor advertises it.",
                          "address", "127.0.0.1");
    const auto dhtPort =
        opt("dht-port", "UDP port of the DHT node: the bootstrap address volunteers use.", "port", "31340");
    const auto servicePort = opt("service-port",
                                 "TCP port of the state donor that volunteers download the run's state from (0: any "
                                 "free port; fix it for a firewall rule).",
                                 "port", "0");
    const auto allReducePort = opt("all-reduce-port",
                                   "TCP port of the socket on which the monitor reduces its shard of averaging rounds "
                                   "(0: any free port; fix it for a firewall rule).",
                                   "port", "0");
    const auto announce = opt("announce",
                              "Advertise HOST (the public address, e.g. a cloud machine's elastic IP in front of "
                              "the private --host) for the service and all-reduce sockets, with the same ports.",
                              "host");
    const auto noPortMapping = opt("no-port-mapping",
                                   "Never ask the router for port mappings (UPnP-IGD, NAT-PMP). By default a --host on "
                                   "a private LAN address asks for the service, all-reduce and DHT ports, unless --announce.");
    const auto noReduce = opt("no-reduce",
                              "Do not take part in averaging rounds. By default the monitor reduces a shard with "
                              "weight 0 and leads groups, so that volunteers behind NAT (client mode) can average.");
    const auto averageStateEvery =
        opt("average-state-every",
            "The trainers' interval of state averaging (their --average-state-every): the monitor joins those rounds "
            "and keeps their result.",
            "n", "10");
    const auto metricsDir =
        opt("metrics-dir", "Where swarm.jsonl and swarm.csv go (default: <data-dir>/metrics).", "dir");
    const auto metricsOut = opt("metrics-out", "The monitor's own metrics as JSON lines (default: none).", "file");
    const auto keep = opt("keep-checkpoints", "States kept in <data-dir>/kept/<run id> (oldest removed).", "n", "5");
    const auto stateEvery = opt("state-every", "Download and keep the swarm's state every N global steps.", "n", "5");
    const auto statusHost =
        opt("status-host", "Address of the HTTP status (0.0.0.0: every interface).", "address", "127.0.0.1");
    const auto statusPort = opt("status-port", "TCP port of the HTTP status (0: any free port).", "port", "31341");
    const auto noStatus = opt("no-status", "Serve no HTTP status.");
    const auto statusInterval =
        opt("status-interval", "Seconds between status lines on stdout (0: none).", "seconds", "60");
    const auto progressPeriod = opt("progress-period", "Seconds between progress reads and records.", "seconds", "1");
    const auto duration = opt("duration", "Stop after this many seconds (default: run until stopped).", "seconds", "0");
    const auto name = opt("name", "Name shown in status and logs.", "name", "monitor");
    const auto threads = opt("threads", "Torch CPU threads.", "n", "1");
    const auto fresh = opt("fresh", "Do not load the monitor's last checkpoint.");
    const auto evaluateEvery = opt("evaluate-every",
                                   "Fine-tune the kept state on the run's downstream task every N steps: accuracy and "
                                   "macro-F1 in swarm.jsonl, evaluation.csv and the status (default: the manifest's "
                                   "evaluation.every_n_steps; 0 there: never).",
                                   "n", "0");
    const auto evaluationTask =
        opt("evaluation-task", "Task directory for --evaluate-every (default: the run's; the bundled run ships one).",
            "dir");
    p.addOptions({manifest, leadKey, allowUnsigned, dataDir, host, dhtPort, servicePort, allReducePort, announce, noPortMapping, noReduce,
                  averageStateEvery, metricsDir, metricsOut, keep, stateEvery,
                  statusHost, statusPort, noStatus, statusInterval, progressPeriod, duration, name, threads, fresh,
                  evaluateEvery, evaluationTask});
    if (!p.parse(args))
        return bad(p.errorText().toStdString() + " (see --help)");
    if (p.isSet(QStringLiteral("help"))) {
        std::printf("%s", qPrintable(p.helpText()));
        return 0;
    }
    if (!p.positionalArguments().isEmpty())
        return bad("unexpected argument " + p.positionalArguments().front().toStdString() + " (see --help)");

    auto &w = c.swarm;
    w.role = PeerRole::Monitor;
    w.allowCuda = false;
    w.statusOut = nullptr;
    if (p.isSet(manifest))
        w.manifest = p.value(manifest).toStdString();
    else if (auto found = findDefaultManifest())
        w.manifest = *found;
    else
        return bad("no run manifest given and the bundled default run was not found; use --manifest FILE");
    if (p.isSet(leadKey))
        c.leadKey = p.value(leadKey).toStdString();
    c.allowUnsigned = p.isSet(allowUnsigned);
    w.dataDir = p.isSet(dataDir) ? fs::path(p.value(dataDir).toStdString()) : userDataDir() / "serve";
    w.host = p.value(host).toStdString();
    w.name = p.value(name).toStdString();
    w.metricsOut = p.value(metricsOut).toStdString();
    w.resume = !p.isSet(fresh);
    if (p.isSet(evaluationTask))
        w.evaluationTask = p.value(evaluationTask).toStdString();
    c.metricsDir = p.isSet(metricsDir) ? fs::path(p.value(metricsDir).toStdString()) : w.dataDir / "metrics";
    c.http.host = p.value(statusHost).toStdString();
    c.httpEnabled = !p.isSet(noStatus);
    c.http.paths = {"/status", "/peers"};

    bool ok = true;
    auto integer = [&](const QCommandLineOption &o, long lo, long hi) {
        bool good = false;
        const long v = p.value(o).toLong(&good);
        ok = ok && good && v >= lo && v <= hi;
        return v;
    };
    auto seconds = [&](const QCommandLineOption &o, double lo) {
        bool good = false;
        const double v = p.value(o).toDouble(&good);
        ok = ok && good && v >= lo;
        return v;
    };
    w.dhtPort = static_cast<std::uint16_t>(integer(dhtPort, 1, 65535));
    if (!ok)
        return bad("--dht-port takes a port number from 1 to 65535 (volunteers need a fixed one)");
    w.servicePort = static_cast<std::uint16_t>(integer(servicePort, 0, 65535));
    if (!ok)
        return bad("--service-port takes a TCP port number from 0 (any) to 65535");
    w.allReducePort = static_cast<std::uint16_t>(integer(allReducePort, 0, 65535));
    if (!ok)
        return bad("--all-reduce-port takes a TCP port number from 0 (any) to 65535");
    w.mapPorts = !p.isSet(noPortMapping);
    w.monitorReduces = !p.isSet(noReduce);
    if (p.isSet(announce)) {
        w.announce = p.value(announce).toStdString();
        try { // the same ports are forwarded: HOST alone
            if (w.announce.find(':') != std::string::npos)
                throw Error("--announce " + w.announce + ": give the host alone; the ports are --service-port and "
                            "--all-reduce-port");
            (void)announcedEndpoints(w.announce, "tcp://0.0.0.0:1", "tcp://0.0.0.0:2");
        } catch (const Error &e) {
            return bad(e.what());
        }
    }
    w.averageStateEvery = integer(averageStateEvery, 0, 1000000000);
    if (!ok)
        return bad("--average-state-every takes a whole number of steps (0: never)");
    c.http.port = static_cast<std::uint16_t>(integer(statusPort, 0, 65535));
    if (!ok)
        return bad("--status-port takes a port number from 0 to 65535");
    w.keepCheckpoints = static_cast<int>(integer(keep, 1, 100000));
    w.monitorStateEvery = integer(stateEvery, 1, 1000000);
    w.threads = static_cast<int>(integer(threads, 1, 1024));
    if (!ok)
        return bad("--keep-checkpoints, --state-every and --threads take whole numbers of at least 1");
    w.evaluateEvery = integer(evaluateEvery, 0, 1000000000);
    if (!ok)
        return bad("--evaluate-every takes a whole number of steps (0: the manifest's)");
    if (p.isSet(evaluationTask) && !p.isSet(evaluateEvery))
        log::warning("serve", "--evaluation-task is used only when the manifest or --evaluate-every sets an interval");
    w.progressPeriod = seconds(progressPeriod, 0.05);
    w.durationSeconds = seconds(duration, 0.0);
    c.statusInterval = seconds(statusInterval, 0.0);
    if (!ok)
        return bad("--progress-period, --duration and --status-interval take non-negative numbers of seconds");
    return -1;
}

// Everything the monitor will write must be writable before anything starts: a lead learns of
// a wrong directory at once, not at the first step an hour later.
void checkWritableDirectory(const fs::path &dir, const char *what)
{
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        throw Error(std::string("cannot create ") + what + " " + dir.string() + ": " + ec.message());
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        throw Error(systemErrorText(std::string("cannot write to ") + what + " " + dir.string(), errno));
}

} // namespace

int serve(const QStringList &args)
{
    ServeConfig c;
    if (const int code = parse(args, c); code >= 0)
        return code;
    auto &w = c.swarm;

    RunManifest manifest;
    try {
        manifest = loadRunManifest(w.manifest);
        const auto trust = verifyRunManifest(w.manifest, w.dataDir / "trust", c.leadKey);
        log::info("serve", "run manifest signature verified: lead key " + trust.key.keyIdHex() + " (" + trust.anchor + ")");
    } catch (const Error &e) {
        if (!c.allowUnsigned)
            return bad(e.what());
        log::warning("serve", std::string("--allow-unsigned: serving anyway although ") + e.what());
    }

    std::unique_ptr<StatusHttpServer> http;
    ServeStatusInput status;
    try {
        checkWritableDirectory(w.dataDir, "the data directory");
        checkWritableDirectory(c.metricsDir, "the metrics directory");
        w.checkpointArchive = w.dataDir / "kept" / manifest.runId;
        checkWritableDirectory(w.checkpointArchive, "the checkpoint directory");
        status.metricsJsonLines = c.metricsDir / "swarm.jsonl";
        status.metricsCsv = c.metricsDir / "swarm.csv";
        status.evaluateEveryNSteps = w.evaluateEvery > 0 ? w.evaluateEvery : manifest.evaluation.everyNSteps;
        if (status.evaluateEveryNSteps > 0)
            status.evaluationCsv = c.metricsDir / "evaluation.csv";
        w.swarmRecorder =
            std::make_shared<SwarmMetricsRecorder>(status.metricsJsonLines, status.metricsCsv, status.evaluationCsv);
        if (c.httpEnabled)
            http = std::make_unique<StatusHttpServer>(c.http);
    } catch (const Error &e) {
        return bad(e.what());
    }

    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    const CheckpointArchive archive(w.checkpointArchive, w.keepCheckpoints);
    status.version = DEDLOC_VERSION;
    status.name = w.name;
    status.startedAt = unixNow();
    status.keepCheckpoints = w.keepCheckpoints;
    auto recorder = w.swarmRecorder;

    SwarmPeer peer(w);
    peer.start();
    bool announced = false;
    int exitCode = 0;
    auto lastLine = std::chrono::steady_clock::now();
    auto lastArchiveScan = std::chrono::steady_clock::time_point{};
    while (true) {
        const auto snapshot = peer.snapshot();
        if (snapshot.state == PeerState::Error) {
            std::fprintf(stderr, "dedloc-lead serve: %s\n", snapshot.stateDetail.c_str());
            exitCode = 2;
            break;
        }
        if (snapshot.state == PeerState::Stopped || g_stop.load())
            break;
        if (!announced && peer.dhtPort() != 0) {
            status.dhtEndpoint = w.host + ":" + std::to_string(peer.dhtPort());
            std::printf("dedloc-lead serve: run %s; DHT bootstrap %s; metrics %s and %s; kept states %s",
                        manifest.runId.c_str(), status.dhtEndpoint.c_str(), status.metricsJsonLines.c_str(),
                        status.metricsCsv.c_str(), w.checkpointArchive.c_str());
            if (http)
                std::printf("; status http://%s:%u/status\n", c.http.host.c_str(), static_cast<unsigned>(http->port()));
            else
                std::printf("\n");
            std::fflush(stdout);
            announced = true;
        }
        const auto now = std::chrono::steady_clock::now();
        if (now - lastArchiveScan >= std::chrono::seconds(1)) {
            status.checkpoints = archive.list();
            lastArchiveScan = now;
        }
        if (http) {
            status.snapshot = snapshot;
            status.now = unixNow();
            status.metrics = recorder->stats();
            status.latestMetrics = recorder->latestByPeer();
            status.latestEvaluation = recorder->latestEvaluation();
            http->publish("/status", serveStatusJson(status).dump());
            http->publish("/peers", servePeersJson(status).dump());
        }
        if (c.statusInterval > 0 && now - lastLine >= std::chrono::duration<double>(c.statusInterval)) {
            std::printf("%s | metrics rows %lld\n", statusLine(snapshot).c_str(), recorder->stats().rows);
            std::fflush(stdout);
            lastLine = now;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    peer.stop();
    const int peerCode = peer.wait();
    return exitCode != 0 ? exitCode : peerCode;
}

} // namespace dedloc::lead
