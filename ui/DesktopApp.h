#pragma once
// The volunteer app assembled: settings, log model, bridge, models, main window, tray. The app
// (app/dedloc/main.cpp) calls runDesktopApp(); tests build a DesktopApp with a fake peer, a
// test-mode Settings and an injected clock and probes.
//
// Wiring for app/dedloc/main.cpp (GUI mode, a display exists):
//     QApplication qtApp(argc, argv);
//     QGuiApplication::setDesktopFileName("dedloc");   // runDesktopApp also does it
//     SwarmPeer peer(...);                              // implements dedloc::PeerControl
//     return dedloc::ui::runDesktopApp(qtApp, peer, dedloc::ui::runInfoFromManifest(manifest));
// runDesktopApp first installs the window's language (Language.h) from the environment variable
// DEDLOC_LANGUAGE: "bn" Bengali, "en" English, unset or empty the system's locale (Bengali when
// its language is Bengali); an unknown value logs a warning and keeps English. It then installs
// the log sink (window + QStandardPaths::AppLocalDataLocation/logs/dedloc.log), shows the window
// (or, with auto-rejoin set and the same run, joins at once), runs the event loop, and calls
// peer.stop() after it ends. Returns the exit code of exec().
//
// Threads: GUI thread only. The peer runs its own threads (PeerControl contract).
#include "PeerBridge.h"
#include "RunInfo.h"

#include <QString>

#include <functional>
#include <memory>

class QApplication;
class QWidget;

namespace dedloc::ui {

class LogModel;
class MainWindow;
class Notifier;
class PeersTableModel;
class Settings;
class TrayController;

class DesktopApp final : public QObject {
    Q_OBJECT

  public:
    // Milestone notifications (when the volunteer opts in): every this many samples contributed.
    static constexpr long long MilestoneSamples = 10000;

    struct Options {
        PeerBridge::Options bridge;
        QString logFile;        // "" = no file (tests); runDesktopApp passes LogModel::defaultLogFile()
        int trayAvailable = -1; // -1 ask QSystemTrayIcon; 0/1 force (tests)
        QString notificationBus; // a QDBusConnection name for the notifications; "" the session bus
    };

    DesktopApp(PeerControl &peer, Settings &settings, const RunInfo &run, Options options);
    ~DesktopApp() override;

    // Shows the window (and the tray icon where one exists); joins at once when auto-rejoin is
    // on and the last joined run is this one.
    void start();

    [[nodiscard]] PeerBridge &bridge() { return *m_bridge; }
    [[nodiscard]] MainWindow &window() { return *m_window; }
    [[nodiscard]] TrayController &tray() { return *m_tray; }
    [[nodiscard]] LogModel &log() { return *m_log; }
    [[nodiscard]] PeersTableModel &peers() { return *m_peers; }
    [[nodiscard]] Notifier &notifier() { return *m_notifier; }

  Q_SIGNALS:
    void quitRequested();

  private:
    void openSettings();

    Settings &m_settings;
    RunInfo m_run;
    std::unique_ptr<LogModel> m_log;
    std::unique_ptr<PeersTableModel> m_peers;
    std::unique_ptr<PeerBridge> m_bridge;
    std::unique_ptr<MainWindow> m_window;
    std::unique_ptr<TrayController> m_tray;
    std::unique_ptr<Notifier> m_notifier;
};

// Runs the volunteer window until Quit (see above). Returns the event loop's exit code.
int runDesktopApp(QApplication &app, PeerControl &peer, const RunInfo &run);

// The same with options for the main-job command and the documented screenshot command.
struct DesktopRunOptions {
    bool joinAtStart = false;             // join without waiting for the Join button (main job)
    QString screenshotPath;               // non-empty: save the window here, then quit
    double screenshotAfterSeconds = 30.0; // ... this long after start (lets the swarm show progress)
    bool startPaused = false;             // a manual pause before joining: nothing computed until Resume
    bool startInTray = false;             // the window hidden, where a tray shows the icon (login)
    // Called once the window is shown, before the event loop runs (the app's control socket).
    std::function<void(DesktopApp &)> onStarted;
};
int runDesktopApp(QApplication &app, PeerControl &peer, const RunInfo &run, const DesktopRunOptions &options);

// Renders `widget` (QWidget::grab; works offscreen) to an image file; the format follows the
// suffix (.png recommended). Returns false (and logs why) when the file cannot be written.
bool saveScreenshot(QWidget &widget, const QString &path);

} // namespace dedloc::ui
