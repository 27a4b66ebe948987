#include "Window.h"

#include "DesktopApp.h"
#include "LocalSwarm.h"
#include "peer/RunAccess.h"
#include "run/RunManifest.h"

#include <QApplication>
#include <QTimer>

#include <cstdio>
#include <filesystem>

bool buildHasWindow() { return true; }

std::unique_ptr<QCoreApplication> makeApplication(bool window, int &argc, char **argv)
{
    if (window)
        return std::make_unique<QApplication>(argc, argv);
    return std::make_unique<QCoreApplication>(argc, argv);
}

int runWindow(QCoreApplication &app, dedloc::SwarmPeer &peer, const CommandLine &cli,
              const dedloc::SwarmOptions &swarm, LocalSwarm *local, const std::string &signatureStatus,
              const std::atomic<bool> &stop)
{
    dedloc::RunManifest manifest;
    try {
        manifest = dedloc::loadRunManifest(swarm.manifest);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "dedloc: %s\n", e.what());
        return 2;
    }
    dedloc::ui::DesktopRunOptions ui;
    ui.joinAtStart = cli.localSwarmTrainers > 0 || cli.join;
    ui.screenshotPath = cli.screenshotPath;
    ui.screenshotAfterSeconds = cli.screenshotAfter;
    // A stop signal ends the window too. exit(), not quit(): Qt 6's quit() first asks every
    // window to close, and the main window refuses (it hides to the tray or says why it stays).
    QTimer signalWatch;
    QObject::connect(&signalWatch, &QTimer::timeout, [&stop] {
        if (stop.load())
            QCoreApplication::exit(0);
    });
    signalWatch.start(200);
    auto runInfo = dedloc::ui::runInfoFromManifest(manifest);
    runInfo.signatureStatus = signatureStatus;
    if (manifest.closed) {
        const auto token = swarm.accessTokenFile.empty() ? dedloc::defaultAccessTokenPath(swarm.dataDir, manifest.runId)
                                                         : swarm.accessTokenFile;
        std::error_code ec;
        runInfo.access = dedloc::ui::closedRunAccessText(token.string(), std::filesystem::is_regular_file(token, ec));
    }
    const int code = dedloc::ui::runDesktopApp(static_cast<QApplication &>(app), peer, runInfo, ui);
    if (local)
        local->stopAll();
    return code;
}
