#include "DesktopApp.h"

#include "Format.h"
#include "Language.h"
#include "LogModel.h"
#include "MainWindow.h"
#include "Notifier.h"
#include "PeersTableModel.h"
#include "Settings.h"
#include "SettingsDialog.h"
#include "TrayController.h"
#include "util/Log.h"

#include <QApplication>
#include <QPixmap>
#include <QTimer>

namespace dedloc::ui {

DesktopApp::DesktopApp(PeerControl &peer, Settings &settings, const RunInfo &run, Options options)
    : m_settings(settings), m_run(run)
{
    initUiResources();
    m_log = std::make_unique<LogModel>();
    m_log->install(options.logFile);
    m_peers = std::make_unique<PeersTableModel>();
    m_bridge = std::make_unique<PeerBridge>(peer, settings, std::move(options.bridge));
    m_window = std::make_unique<MainWindow>(*m_bridge, *m_peers, *m_log, settings, run);
    m_tray = std::make_unique<TrayController>(*m_bridge, *m_window);
    m_window->setTrayAvailable(options.trayAvailable < 0 ? TrayController::available() : options.trayAvailable != 0);
    Notifier::Options notify;
    notify.busConnection = options.notificationBus;
    notify.fallback = [tray = m_tray.get()](const QString &summary, const QString &body) { tray->showMessage(summary, body); };
    m_notifier = std::make_unique<Notifier>(std::move(notify));
    auto applyNotifySettings = [this] {
        m_notifier->setEnabled(m_settings.notifications());
        m_notifier->setMilestoneSamples(m_settings.milestoneNotifications() ? MilestoneSamples : 0);
    };
    applyNotifySettings();
    connect(&m_settings, &Settings::changed, this, applyNotifySettings);
    connect(m_bridge.get(), &PeerBridge::snapshotChanged, m_notifier.get(), &Notifier::onSnapshot);
    connect(m_bridge.get(), &PeerBridge::pauseDecisionChanged, m_notifier.get(), &Notifier::onPauseDecision);
    connect(m_window.get(), &MainWindow::quitRequested, this, &DesktopApp::quitRequested);
    connect(m_window.get(), &MainWindow::settingsRequested, this, &DesktopApp::openSettings);
    connect(m_window.get(), &MainWindow::hiddenToTray, m_tray.get(), &TrayController::notifyHidden);
    connect(m_tray.get(), &TrayController::quitRequested, this, &DesktopApp::quitRequested);
    connect(m_bridge.get(), &PeerBridge::joinedChanged, this, [this](bool joined) {
        if (joined)
            m_settings.setLastJoinedRun(QString::fromStdString(m_run.runId));
    });
}

DesktopApp::~DesktopApp()
{
    // Widgets first (they hold pointers into the models and the bridge), the log sink last.
    m_notifier.reset();
    m_tray.reset();
    m_window.reset();
    m_bridge.reset();
    m_peers.reset();
    m_log.reset();
}

void DesktopApp::start()
{
    m_window->show();
    m_tray->show();
    if (m_settings.autoRejoin() && !m_run.runId.empty() &&
        m_settings.lastJoinedRun() == QString::fromStdString(m_run.runId)) {
        log::info("ui", "auto-rejoin is on: joining " + m_run.runId);
        m_bridge->join();
    }
}

void DesktopApp::openSettings()
{
    SettingsDialog dialog(m_settings, m_window.get());
    dialog.exec(); // a modal dialog: the event loop (and the bridge's timer) keeps running
}

int runDesktopApp(QApplication &app, PeerControl &peer, const RunInfo &run)
{
    return runDesktopApp(app, peer, run, DesktopRunOptions{});
}

int runDesktopApp(QApplication &app, PeerControl &peer, const RunInfo &run, const DesktopRunOptions &runOptions)
{
    Settings settings;
    installChosenUiLanguage(app, settings.language()); // before any widget: texts are translated when made
    QGuiApplication::setDesktopFileName(QStringLiteral("dedloc")); // GNOME trays match the .desktop file
    QApplication::setQuitOnLastWindowClosed(false);                // the tray keeps the app alive
    app.setWindowIcon(appIcon());
    DesktopApp::Options options;
    options.logFile = LogModel::defaultLogFile();
    int code = 0;
    {
        DesktopApp desktop(peer, settings, run, std::move(options));
        // exit(), not quit(): Qt 6's quit() asks the windows to close first, and the main window
        // refuses (closing it hides it to the tray), which would cancel the Quit of the menus.
        QObject::connect(&desktop, &DesktopApp::quitRequested, &app, [] { QCoreApplication::exit(0); });
        if (runOptions.startPaused)
            desktop.bridge().pauseManually();
        desktop.start();
        if (runOptions.startInTray && desktop.window().trayAvailable())
            desktop.window().hide();
        if (runOptions.joinAtStart)
            desktop.bridge().join();
        if (runOptions.onStarted)
            runOptions.onStarted(desktop);
        if (!runOptions.screenshotPath.isEmpty()) {
            QTimer::singleShot(int(runOptions.screenshotAfterSeconds * 1000.0), &desktop, [&] {
                const bool ok = saveScreenshot(desktop.window(), runOptions.screenshotPath);
                QCoreApplication::exit(ok ? 0 : 1);
            });
        }
        log::info("ui",
                  "settings: " + settings.fileName().toStdString() + "; log: " + desktop.log().logFile().toStdString());
        code = app.exec();
        // stop() may take up to the round timeouts: do not leave a frozen window on screen.
        desktop.window().hide();
        desktop.tray().hide();
        log::info("ui", "quitting: leaving the swarm");
        peer.stop();
    }
    return code;
}

bool saveScreenshot(QWidget &widget, const QString &path)
{
    const QPixmap shot = widget.grab();
    if (shot.isNull() || !shot.save(path)) {
        log::error("ui", "cannot write the screenshot " + path.toStdString());
        return false;
    }
    log::info("ui", "screenshot written to " + path.toStdString());
    return true;
}

} // namespace dedloc::ui
