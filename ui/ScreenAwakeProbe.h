#pragma once
// Which program keeps the screen awake on a Wayland desktop (a game, a film player): auto-pause
// rule 4 (system/AutoPausePolicy.h) where native Wayland windows are invisible to X11, so
// FullScreenProbe cannot see them.
//
// Why this and not the window: Wayland gives no client the other clients' windows or their
// full-screen state. What GNOME and KDE do offer every program is the list of idle inhibitors:
// games (SDL asks for it by default), film players and browsers playing a film ask the session not
// to blank the screen while they play, through org.freedesktop.ScreenSaver.Inhibit, the
// Inhibit portal or GTK/Qt's own calls, and every one of those ends in the session's list.
// A program that keeps the screen awake in a window (a film not full screen) counts too.
//
// Sources, on the session bus, queried ASYNCHRONOUSLY every `refreshMs` (never blocking the GUI
// thread; each call gives up after 2 s):
// - GNOME (gnome-session): org.gnome.SessionManager at /org/gnome/SessionManager, method
//   GetInhibitors() -> ao; per inhibitor (interface org.gnome.SessionManager.Inhibitor)
//   GetFlags() -> u, of which bit 8 is "idle" (gsm-inhibitor-flag: 1 logout, 2 switch user,
//   4 suspend, 8 idle), and GetAppId() -> s for the name. Inhibitors of suspend only (a music
//   player, a download) do not count.
// - KDE (PowerDevil): org.kde.Solid.PowerManagement.PolicyAgent at
//   /org/kde/Solid/PowerManagement/PolicyAgent, HasInhibition(u 4) -> b, 4 being the
//   ChangeScreenSettings policy; it names no program: "a program".
// GNOME is asked first; when its service is missing, KDE; when neither answers, nothing is known
// (logged once) and both are asked again at the next refresh (a desktop can start later).
//
// Errors: no bus, no service, a hung service or a malformed reply read as "nothing known"
// (""); never throws, never blocks.
// Threads: GUI thread (its replies arrive through the event loop).
#include <QDBusConnection>
#include <QObject>
#include <QString>
#include <QTimer>

#include <memory>
#include <string>

namespace dedloc::ui {

class ScreenAwakeProbe final : public QObject {
    Q_OBJECT

  public:
    // `bus`: where the desktop's session services live (tests pass a private bus).
    explicit ScreenAwakeProbe(QDBusConnection bus = QDBusConnection::sessionBus(), int refreshMs = 2000,
                              QObject *parent = nullptr);

    // The program that last kept the screen awake, "a program" when the desktop does not say,
    // or "" (none, or nothing known).
    [[nodiscard]] std::string program() const { return m_program; }
    // Which desktop answered the last query: "gnome", "kde" or "" (none).
    [[nodiscard]] QString desktop() const { return m_desktop; }
    // Completed queries so far (tests wait on it).
    [[nodiscard]] int queries() const { return m_queries; }

    // True in a Wayland session ($XDG_SESSION_TYPE "wayland", or $WAYLAND_DISPLAY set), where
    // FullScreenProbe sees X11 programs only.
    [[nodiscard]] static bool waylandSession();

  private:
    struct GnomeQuery;
    void refresh();
    void askGnome();
    void askGnomeInhibitor(const std::shared_ptr<GnomeQuery> &query, const QString &path);
    void askKde();
    void finish(const QString &desktop, std::string program);

    QDBusConnection m_bus;
    QTimer m_timer;
    bool m_pending = false;
    bool m_reportedNone = false;
    int m_queries = 0;
    QString m_desktop;
    std::string m_program;
};

} // namespace dedloc::ui
