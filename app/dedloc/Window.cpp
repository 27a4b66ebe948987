#include "Window.h"

#include "ControlChannel.h"
#include "DesktopApp.h"
#include "Language.h"
#include "LocalSwarm.h"
#include "MainWindow.h"
#include "Settings.h"
#include "peer/RunAccess.h"
#include "run/RunManifest.h"

#include <QApplication>
#include <QTimer>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>

#include <unistd.h>

namespace {

// Qt's X11 platform ends the process with exit(1) when the X server goes away, as at a logout
// that closes the display before the session's SIGTERM arrives: the peer would go without its
// final checkpoint, and exit's handlers and static destructors run while the worker still
// trains (a crash). Qt says so first with the warning "The X11 connection broke ..." (the only
// notice it gives): while the window runs, a message handler that sees it stops the peer (its
// final checkpoint) and the window's local swarm, then ends the process with 0: the session
// ended, nothing failed. Every other message goes to the previous handler.
std::atomic<bool> g_displayGuardArmed{false};
std::function<void()> *g_stopOnDisplayLoss = nullptr;
QtMessageHandler g_previousMessageHandler = nullptr;

void watchForDisplayLoss(QtMsgType type, const QMessageLogContext &context, const QString &message)
{
    if (type == QtWarningMsg && message.startsWith(QLatin1String("The X11 connection broke"))
        && g_displayGuardArmed.exchange(false) && g_stopOnDisplayLoss) {
        std::fprintf(stderr, "dedloc: %s\ndedloc: the display closed: stopping after the current micro-batch, with a "
                             "checkpoint\n",
                     qPrintable(message));
        (*g_stopOnDisplayLoss)();
        std::fflush(nullptr);
        ::_exit(0);
    }
    if (g_previousMessageHandler)
        g_previousMessageHandler(type, context, message);
}

class DisplayLossGuard final {
  public:
    explicit DisplayLossGuard(std::function<void()> stop) : m_stop(std::move(stop))
    {
        g_stopOnDisplayLoss = &m_stop;
        g_previousMessageHandler = qInstallMessageHandler(watchForDisplayLoss);
        g_displayGuardArmed = true;
    }
    ~DisplayLossGuard()
    {
        g_displayGuardArmed = false;
        qInstallMessageHandler(g_previousMessageHandler);
        g_stopOnDisplayLoss = nullptr;
    }
    DisplayLossGuard(const DisplayLossGuard &) = delete;
    DisplayLossGuard &operator=(const DisplayLossGuard &) = delete;

  private:
    std::function<void()> m_stop;
};

dedloc::ControlPauseState pauseState(const dedloc::PauseDecision &d)
{
    if (!d.paused)
        return {};
    return {true, dedloc::pauseCauseName(d.cause), d.reason, d.resumesAt};
}

// What `dedloc ctl` asks of the window, done as the window's own buttons do it.
nlohmann::json handleControl(dedloc::ui::DesktopApp &desktop, const dedloc::ControlRequest &r)
{
    auto &bridge = desktop.bridge();
    switch (r.command) {
    case dedloc::ControlCommand::Status: {
        auto reply = dedloc::controlOk();
        reply["status"] = dedloc::controlStatus(bridge.snapshot(), pauseState(bridge.pauseDecision()), true);
        return reply;
    }
    case dedloc::ControlCommand::Pause:
        if (r.pauseSeconds > 0.0)
            bridge.pauseFor(r.pauseSeconds);
        else
            bridge.pauseManually();
        return dedloc::controlOk();
    case dedloc::ControlCommand::Resume:
        bridge.resumeManually();
        return dedloc::controlOk();
    case dedloc::ControlCommand::Quit:
        QTimer::singleShot(0, [] { QCoreApplication::exit(0); }); // after the answer is sent
        return dedloc::controlOk();
    case dedloc::ControlCommand::Raise: {
        auto &window = desktop.window();
        window.showNormal();
        window.raise();
        window.activateWindow();
        return dedloc::controlOk();
    }
    }
    return dedloc::controlError("unknown command");
}

} // namespace

bool buildHasWindow() { return true; }

std::unique_ptr<QCoreApplication> makeApplication(bool window, int &argc, char **argv)
{
    if (window)
        return std::make_unique<QApplication>(argc, argv);
    return std::make_unique<QCoreApplication>(argc, argv);
}

int runWindow(QCoreApplication &app, dedloc::SwarmPeer &peer, const CommandLine &cli,
              const dedloc::SwarmOptions &swarm, LocalSwarm *local, const std::string &signatureStatus,
              const QString &controlPath, const std::atomic<bool> &stop)
{
    dedloc::RunManifest manifest;
    try {
        manifest = dedloc::loadRunManifest(swarm.manifest);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "dedloc: %s\n", e.what());
        return 2;
    }
    // The run's texts below are made before the window: in the volunteer's language already.
    dedloc::ui::installChosenUiLanguage(app, dedloc::ui::Settings().language());
    dedloc::ui::DesktopRunOptions ui;
    ui.joinAtStart = cli.localSwarmTrainers > 0 || cli.join;
    ui.screenshotPath = cli.screenshotPath;
    ui.screenshotAfterSeconds = cli.screenshotAfter;
    ui.startPaused = cli.startPaused;
    ui.startInTray = cli.inTray;
    std::unique_ptr<ControlServer> control;
    ui.onStarted = [&](dedloc::ui::DesktopApp &desktop) {
        control = std::make_unique<ControlServer>([&desktop](const dedloc::ControlRequest &r) { return handleControl(desktop, r); });
        QString error;
        if (!control->listen(controlPath, &error)) {
            std::fprintf(stderr, "dedloc: %s\n", qPrintable(error));
            QTimer::singleShot(0, [] { QCoreApplication::exit(1); });
        }
    };
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
    int code = 0;
    {
        DisplayLossGuard guard([&] {
            peer.stop();
            if (local)
                local->stopAll();
        });
        code = dedloc::ui::runDesktopApp(static_cast<QApplication &>(app), peer, runInfo, ui);
    }
    control.reset();
    if (local)
        local->stopAll();
    return code;
}
