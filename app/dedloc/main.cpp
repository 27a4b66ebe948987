// dedloc: the volunteer's program. `dedloc --headless` trains without a window.
#include "net/PeerIdentity.h"
#include "run/RunPaths.h"
#include "security/RunTrust.h"
#include "train/TrainingSession.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"

#include <QCommandLineParser>
#include <QCoreApplication>

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
    options.allowCuda = !parser.isSet(cpu);
    options.resume = !parser.isSet(fresh);

    if (!parser.isSet(headless))
        dedloc::log::info("app", "this build has no window yet; training headless (--headless)");

    dedloc::log::info("app", "Ctrl-C stops after the current micro-batch and saves a checkpoint");
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    return dedloc::runTrainingSession(options, g_stop);
}
