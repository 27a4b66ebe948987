// dedloc: the volunteer's program. With a display it opens the window; `--headless` (or no
// display) prints status lines instead. `--local-swarm N` runs the main job: a swarm on this
// machine (a monitor and N trainers, each its own process; with a window, the window's process
// is one of the trainers).
#include "CommandLine.h"
#include "ControlChannel.h"
#include "CtlCommand.h"
#include "Headless.h"
#include "LocalSwarm.h"
#include "StopSignals.h"
#include "Window.h"
#include "net/PeerIdentity.h"
#include "run/RunPaths.h"
#include "security/RunTrust.h"
#include "peer/SwarmPeer.h"
#include "train/TrainingSession.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"

#include <QCoreApplication>
#include <QDir>
#include <QThread>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

namespace {

// Decided before Qt starts: a QApplication cannot replace a QCoreApplication later.
bool wantsWindow(int argc, char *argv[])
{
    if (!buildHasWindow())
        return false;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!std::strcmp(a, "--headless") || !std::strcmp(a, "--solo") || !std::strcmp(a, "--help")
            || !std::strcmp(a, "-h") || !std::strcmp(a, "--version") || !std::strcmp(a, "-v")
            || !std::strcmp(a, "--print-peer-key"))
            return false;
        if (!std::strcmp(a, "--role") && i + 1 < argc && std::strcmp(argv[i + 1], "trainer") != 0)
            return false;
    }
    return qEnvironmentVariableIsSet("DISPLAY") || qEnvironmentVariableIsSet("WAYLAND_DISPLAY")
           || qgetenv("QT_QPA_PLATFORM") == "offscreen";
}

int printPeerKey(const std::filesystem::path &dataDir)
{
    try {
        const auto identity = dedloc::PeerIdentity::loadOrCreate(dataDir / "identity.key");
        std::printf("%s\n", dedloc::toHex(identity.publicKey().data(), identity.publicKey().size()).c_str());
        dedloc::log::info("app", "peer id " + identity.peerId() + "; send the key above to the run's lead for an access token");
        return 0;
    } catch (const dedloc::Error &e) {
        std::fprintf(stderr, "dedloc: %s\n", e.what());
        return 2;
    }
}

// Nothing is trained from a run whose manifest is not signed by its lead (security/RunTrust.h).
// Returns -1 to go on, or the exit code. `status` gets what the join page shows.
int verifyRun(CommandLine &cli, std::string &status)
{
    const auto &manifest = cli.session.manifest;
    std::optional<std::filesystem::path> installedKey = cli.leadKey;
    std::error_code sameFileError;
    if (!installedKey) {
        if (const auto bundled = dedloc::findDefaultManifest(); bundled
            && std::filesystem::equivalent(*bundled, manifest, sameFileError)
            && std::filesystem::exists(bundled->parent_path() / "lead.pub"))
            installedKey = bundled->parent_path() / "lead.pub";
    }
    try {
        // A key the volunteer names must be the one this peer trusts: a key pinned earlier for
        // the run wins over an installed one, but not silently over an explicit one.
        std::optional<dedloc::minisign::PublicKey> named;
        if (cli.leadKey)
            named = dedloc::minisign::loadPublicKey(*cli.leadKey);
        const auto trust = dedloc::verifyRunManifest(manifest, cli.session.dataDir / "trust", installedKey);
        if (named && trust.anchor == "pinned" && named->keyId != trust.key.keyId)
            throw dedloc::Error("--lead-key " + cli.leadKey->string() + " (key " + named->keyIdHex() +
                                ") is not the key pinned for this run (" + trust.key.keyIdHex() + ", in " +
                                trust.pinFile.string() + "); remove that file if the lead really changed keys");
        dedloc::log::info("app", "run manifest signature verified: lead key " + trust.key.keyIdHex() + " (" + trust.anchor + ")");
        status = "verified: lead key " + trust.key.keyIdHex() + " (" + trust.anchor + ")";
        cli.swarm.leadKey = trust.key; // closed runs: it signs the access tokens
    } catch (const dedloc::Error &e) {
        if (!cli.allowUnsigned) {
            std::fprintf(stderr, "dedloc: %s\n", e.what());
            return 2;
        }
        dedloc::log::warning("app", std::string("the manifest did not verify (") + e.what()
                                        + "); --allow-unsigned overrides that: training anyway");
        status = std::string("NOT verified (--allow-unsigned): ") + e.what();
    }
    return -1;
}

// One app per data directory: a second start raises the first one's window, or (headless)
// says that one runs. Returns -1 to go on, or the exit code.
int refuseSecondInstance(const QString &controlPath, bool window)
{
    QString error;
    const auto reply = sendControlRequest(controlPath, {window ? dedloc::ControlCommand::Raise : dedloc::ControlCommand::Status, 0.0},
                                          2000, &error);
    if (!reply)
        return -1;
    if (window && reply->value("ok", false)) {
        std::printf("dedloc already runs for this data directory: its window was raised\n");
        return 0;
    }
    std::fprintf(stderr, "dedloc: another dedloc runs for this data directory; stop it (dedloc ctl quit) or use another --data-dir\n");
    return 1;
}

} // namespace

int main(int argc, char *argv[])
{
    if (argc >= 2 && !std::strcmp(argv[1], "ctl")) { // dedloc ctl ...: talk to the running app
        QCoreApplication ctl(argc, argv);
        return runCtl(QCoreApplication::arguments().mid(2));
    }
    const bool window = wantsWindow(argc, argv);
    const auto app = makeApplication(window, argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("dedloc"));
    QCoreApplication::setApplicationVersion(QStringLiteral(DEDLOC_VERSION));

    CommandLine cli;
    if (const int code = cli.parse(QCoreApplication::arguments()); code >= 0)
        return code;
    if (cli.printPeerKey)
        return printPeerKey(cli.session.dataDir);
    // The socket `dedloc ctl` finds: keyed by the data directory the volunteer gave (a local
    // swarm's peers use directories below it, each with its own socket).
    const QString controlPath = controlSocketPath(QString::fromStdString(cli.swarm.dataDir.string()));
    if (!cli.solo)
        if (const int code = refuseSecondInstance(controlPath, window); code >= 0)
            return code;
    std::string signatureStatus = "not checked";
    if (const int code = verifyRun(cli, signatureStatus); code >= 0)
        return code;
    installStopSignals();
    const auto &stop = stopRequested();

    if (cli.solo) {
        dedloc::log::info("app", "Ctrl-C stops after the current micro-batch and saves a checkpoint");
        return dedloc::runTrainingSession(cli.session, stop);
    }

    auto swarm = cli.swarm;
    if (!swarm.name.empty())
        dedloc::log::setStderrTag(swarm.name); // a local swarm's peers share one terminal
    std::unique_ptr<LocalSwarm> local;
    if (cli.localSwarmTrainers > 0) {
        // With a window, this process is trainer-1 and the launcher starts the others.
        auto localOptions = cli.localSwarm;
        if (window)
            localOptions.trainers = cli.localSwarmTrainers - 1;
        local = std::make_unique<LocalSwarm>(localOptions);
        if (const int code = local->start(window ? 2 : 1); code != 0)
            return code;
        if (!window)
            return local->wait(stop);
        const QString dir = QDir(cli.localSwarm.dataDir).filePath(QStringLiteral("local-swarm/trainer-1"));
        QDir().mkpath(dir);
        swarm.dataDir = dir.toStdString();
        swarm.name = "trainer-1";
        swarm.threads = cli.localSwarm.threads;
        swarm.dhtPort = 0; // the monitor holds the swarm's well-known port
        swarm.bootstrap = {local->bootstrap().toStdString()};
        if (!cli.localSwarm.metricsDir.isEmpty())
            swarm.metricsOut = QDir(cli.localSwarm.metricsDir).filePath(QStringLiteral("trainer-1.jsonl")).toStdString();
    }

    dedloc::log::info("app", "Ctrl-C stops after the current micro-batch and saves a checkpoint");
    if (!window) {
        dedloc::SwarmPeer peer(swarm);
        return runHeadless(peer, {cli.statusInterval, swarm.name, controlPath, cli.startPaused}, stop);
    }
    swarm.statusOut = nullptr; // the window shows the status
    dedloc::SwarmPeer peer(swarm);
    return runWindow(*app, peer, cli, swarm, local.get(), signatureStatus, controlPath, stop);
}
