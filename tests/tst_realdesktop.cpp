// The volunteer app on a real X11 desktop, made here: Xvfb, a session bus (dbus-daemon), a window
// manager (openbox, which implements EWMH full screen), a tray host (trayer, XEmbed system tray)
// and a notification daemon (dunst). The app (DesktopApp with a fake peer, the real probes) runs
// on it through Qt's xcb platform:
//   - the tray icon appears, and its menu, opened and clicked with the mouse (xdotool), pauses
//     and resumes training;
//   - a program that asks the window manager for full screen (another process: this binary with
//     --full-screen-window) pauses training within 10 s, with a notification that the daemon
//     shows; training resumes after the program closes and the quiet period passes.
// Skips when one of the programs is missing (installers/install-deps.sh installs them).
#include "DesktopApp.h"
#include "FakePeer.h"
#include "MainWindow.h"
#include "Notifier.h"
#include "Settings.h"
#include "TrayController.h"

#include <QApplication>
#include <QMenu>
#include <QScreen>
#include <QProcess>
#include <QStandardPaths>
#include <QtTest>

#include <xcb/xcb.h>

#include <csignal>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace dedloc;
using namespace dedloc::ui;

namespace {

// The child: an X client that asks for full screen as games and players do (EWMH: the
// _NET_WM_STATE_FULLSCREEN state set before the window is mapped), then waits to be killed.
int fullScreenWindow()
{
    xcb_connection_t *c = xcb_connect(nullptr, nullptr);
    if (xcb_connection_has_error(c))
        return 1;
    const xcb_screen_t *screen = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
    auto atom = [c](const char *name) {
        auto *r = xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, std::uint16_t(std::strlen(name)), name), nullptr);
        const xcb_atom_t a = r ? r->atom : xcb_atom_t(XCB_ATOM_NONE);
        std::free(r);
        return a;
    };
    const xcb_window_t w = xcb_generate_id(c);
    xcb_create_window(c, XCB_COPY_FROM_PARENT, w, screen->root, 0, 0, 320, 240, 0, XCB_WINDOW_CLASS_INPUT_OUTPUT,
                      screen->root_visual, 0, nullptr);
    static const char wmClass[] = "game\0FullScreenGame";
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, w, XCB_ATOM_WM_CLASS, XCB_ATOM_STRING, 8, sizeof wmClass, wmClass);
    const xcb_atom_t full = atom("_NET_WM_STATE_FULLSCREEN");
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, w, atom("_NET_WM_STATE"), XCB_ATOM_ATOM, 32, 1, &full);
    xcb_map_window(c, w);
    xcb_flush(c);
    while (xcb_generic_event_t *e = xcb_wait_for_event(c))
        std::free(e);
    return 0;
}

// The desktop's programs, started before Qt (plain fork/exec: no Qt object may outlive the
// application that made it) and stopped after it.
struct Desktop {
    std::vector<pid_t> pids;
    std::string display, bus, missing;

    static std::string which(const char *program)
    {
        const char *path = std::getenv("PATH");
        std::string dirs = path ? path : "/usr/bin:/bin";
        for (std::size_t at = 0; at <= dirs.size();) {
            const auto end = std::min(dirs.find(':', at), dirs.size());
            const std::string candidate = dirs.substr(at, end - at) + "/" + program;
            if (::access(candidate.c_str(), X_OK) == 0)
                return candidate;
            at = end + 1;
        }
        return {};
    }
    // Starts `argv`; with `firstLine`, returns the first line it prints (Xvfb's display number,
    // dbus-daemon's address), waiting up to 20 s.
    std::string run(std::vector<std::string> argv, bool firstLine = false)
    {
        int fds[2] = {-1, -1};
        if (firstLine && ::pipe(fds) != 0)
            return {};
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::setpgid(0, 0);
            const int null = ::open("/dev/null", O_RDWR);
            ::dup2(firstLine ? fds[1] : null, 1);
            ::dup2(null, 2);
            std::vector<char *> args;
            for (auto &a : argv)
                args.push_back(a.data());
            args.push_back(nullptr);
            ::execv(which(argv[0].c_str()).c_str(), args.data());
            ::_exit(127);
        }
        pids.push_back(pid);
        if (!firstLine)
            return {};
        ::close(fds[1]);
        std::string line;
        pollfd pfd{fds[0], POLLIN, 0};
        char c = 0;
        while (line.find('\n') == std::string::npos && ::poll(&pfd, 1, 20000) > 0 && ::read(fds[0], &c, 1) == 1)
            line += c;
        ::close(fds[0]);
        while (!line.empty() && (line.back() == '\n' || line.back() == ' '))
            line.pop_back();
        return line;
    }
    bool start()
    {
        for (const char *program : {"Xvfb", "dbus-daemon", "openbox", "trayer", "dunst", "dunstctl", "xdotool"})
            if (which(program).empty())
                missing += std::string(program) + " ";
        if (!missing.empty())
            return false;
        display = std::string(":").append(run({"Xvfb", "-displayfd", "1", "-screen", "0", "1280x800x24", "-nolisten", "tcp"}, true));
        bus = run({"dbus-daemon", "--session", "--nofork", "--print-address=1"}, true);
        if (display.size() < 2 || bus.empty())
            return false;
        ::setenv("DISPLAY", display.c_str(), 1);
        ::setenv("DBUS_SESSION_BUS_ADDRESS", bus.c_str(), 1);
        run({"openbox"});
        ::usleep(500000); // the window manager first, then the dock and the daemon
        run({"trayer", "--edge", "top", "--align", "right", "--widthtype", "request", "--height", "32"});
        run({"dunst"});
        ::usleep(1000000);
        return true;
    }
    ~Desktop()
    {
        for (auto it = pids.rbegin(); it != pids.rend(); ++it) {
            ::kill(*it, SIGTERM);
            ::waitpid(*it, nullptr, 0);
        }
    }
};

Desktop *g_desktop = nullptr;

// Runs a desktop tool (xdotool, dunstctl) without blocking the event loop; returns its output.
QString tool(const QString &program, const QStringList &arguments)
{
    QProcess p;
    p.start(QStandardPaths::findExecutable(program), arguments);
    if (!QTest::qWaitFor([&] { return p.state() == QProcess::NotRunning; }, 10000))
        p.kill();
    return QString::fromUtf8(p.readAllStandardOutput());
}

void clickAt(QPoint global, int button)
{
    tool(QStringLiteral("xdotool"), {QStringLiteral("mousemove"), QString::number(global.x()), QString::number(global.y())});
    QTest::qWait(200);
    tool(QStringLiteral("xdotool"), {QStringLiteral("click"), QString::number(button)});
}

} // namespace

class TestRealDesktop final : public QObject {
    Q_OBJECT

  private:
    QTemporaryDir m_dir;
    std::unique_ptr<Settings> m_settings;
    std::unique_ptr<test::FakePeer> m_peer;
    std::unique_ptr<DesktopApp> m_app;

    PeerState state() const { return m_app->bridge().snapshot().state; }

  private Q_SLOTS:
    void initTestCase()
    {
        if (!g_desktop)
            QSKIP("no desktop: a program is missing, or Xvfb did not start (installers/install-deps.sh installs them)");
        m_settings = Settings::forTesting(m_dir.filePath(QStringLiteral("settings.ini")));
        auto rules = m_settings->pauseRules();
        rules.quietPeriodSeconds = 2.0;
        m_settings->setPauseRules(rules);
        m_peer = std::make_unique<test::FakePeer>();
        RunInfo run;
        run.runId = "fake-run";
        run.name = "Fake run";
        m_app = std::make_unique<DesktopApp>(*m_peer, *m_settings, run, DesktopApp::Options{}); // the real probes
        m_app->start();
        m_app->bridge().join();
        QTRY_COMPARE_WITH_TIMEOUT(state(), PeerState::Training, 10000);
    }

    void cleanupTestCase()
    {
        m_app.reset();
        if (m_peer)
            m_peer->stop();
    }

    void trayMenuPausesAndResumes()
    {
        auto &tray = m_app->tray();
        QVERIFY(TrayController::available()); // trayer owns the system tray selection
        QTRY_VERIFY_WITH_TIMEOUT(!tray.iconGeometry().isEmpty(), 10000);
        const QRect icon = tray.iconGeometry();
        auto choose = [&](QAction *action) {
            clickAt(icon.center(), 3); // right-click opens the menu
            if (!QTest::qWaitFor([&] { return tray.menu()->isVisible(); }, 5000))
                return false;
            // DEDLOC_SCREENSHOT_DIR: the screen with the tray and its open menu (the user guide's picture).
            if (const auto dir = qEnvironmentVariable("DEDLOC_SCREENSHOT_DIR"); !dir.isEmpty() && action == tray.pauseAction()) {
                QTest::qWait(300);
                const QRect menuArea = tray.menu()->geometry().united(icon).adjusted(-40, -10, 10, 40);
                QGuiApplication::primaryScreen()->grabWindow(0, menuArea.x(), menuArea.y(), menuArea.width(), menuArea.height())
                    .save(dir + QStringLiteral("/tray-menu.png"));
            }
            const QRect item = tray.menu()->actionGeometry(action);
            clickAt(tray.menu()->mapToGlobal(item.center()), 1);
            return true;
        };
        QVERIFY2(choose(tray.pauseAction()), "the tray menu did not open");
        QTRY_COMPARE_WITH_TIMEOUT(state(), PeerState::Paused, 5000);
        const auto frozen = m_peer->samplesComputed();
        QTest::qWait(500);
        QCOMPARE(m_peer->samplesComputed(), frozen);
        QVERIFY2(choose(tray.resumeAction()), "the tray menu did not open");
        QTRY_COMPARE_WITH_TIMEOUT(state(), PeerState::Training, 5000);
        QTRY_VERIFY_WITH_TIMEOUT(m_peer->samplesComputed() > frozen, 5000);
    }

    void aFullScreenProgramPausesWithANotification()
    {
        QSignalSpy notified(&m_app->notifier(), &Notifier::notified);
        QProcess game;
        game.start(QCoreApplication::applicationFilePath(), {QStringLiteral("--full-screen-window")});
        QVERIFY(game.waitForStarted(5000));
        QTRY_COMPARE_WITH_TIMEOUT(state(), PeerState::Paused, 10000);
        QCOMPARE(QString::fromStdString(m_app->bridge().pauseDecision().reason), QString("FullScreenGame is full screen"));
        // The daemon took the notification: the call returned its id, and dunst counts it.
        QTRY_VERIFY_WITH_TIMEOUT(notified.count() >= 1, 5000);
        QCOMPARE(notified.at(0).at(0).toString(), QString("DeDLOC paused"));
        QCOMPARE(notified.at(0).at(2).toString(), QString("dbus"));
        const int shown = tool(QStringLiteral("dunstctl"), {QStringLiteral("count"), QStringLiteral("displayed")}).trimmed().toInt() +
                          tool(QStringLiteral("dunstctl"), {QStringLiteral("count"), QStringLiteral("history")}).trimmed().toInt();
        QVERIFY(shown >= 1);

        game.kill(); // the game ends: after the quiet period (2 s here) training resumes
        game.waitForFinished(5000);
        QTRY_COMPARE_WITH_TIMEOUT(state(), PeerState::Training, 10000);
    }
};

int main(int argc, char **argv)
{
    if (argc > 1 && !std::strcmp(argv[1], "--full-screen-window"))
        return fullScreenWindow();
    auto desktop = std::make_unique<Desktop>();
    if (desktop->start()) {
        g_desktop = desktop.get();
        ::setenv("QT_QPA_PLATFORM", "xcb", 1);
    } else {
        ::setenv("QT_QPA_PLATFORM", "offscreen", 1); // initTestCase skips, saying why
        std::fprintf(stderr, "no desktop: missing %s\n", desktop->missing.c_str());
    }
    int code = 0;
    {
        QApplication app(argc, argv);
        TestRealDesktop test;
        code = QTest::qExec(&test, argc, argv);
    }
    desktop.reset();
    return code;
}

#include "tst_realdesktop.moc"
