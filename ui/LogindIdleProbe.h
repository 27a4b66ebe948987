#pragma once
// How long the user has been idle, from systemd-logind (the "user active" auto-pause rule).
//
// Source: the org.freedesktop.login1.Session properties IdleHint (b) and IdleSinceHint (t,
// microseconds of CLOCK_REALTIME) of the caller's session, /org/freedesktop/login1/session/auto
// (freedesktop.org "org.freedesktop.login1" D-Bus API), read with an ASYNCHRONOUS D-Bus call every
// `refreshMs`, so the GUI thread never waits on the bus. The desktop (GNOME, KDE) sets IdleHint
// after its own idle delay.
// Desktops that never set IdleHint would make the user look active forever; so until IdleHint has
// been seen true once in this process, idleSeconds() stays unknown (< 0) and the rule does nothing.
// No system bus, no logind, no session: unknown, logged once.
// Threads: GUI thread (needs an event loop for the replies).
#include <QObject>
#include <QTimer>

namespace dedloc::ui {

class LogindIdleProbe final : public QObject {
    Q_OBJECT

  public:
    explicit LogindIdleProbe(QObject *parent = nullptr, int refreshMs = 5000, bool query = true);

    // Seconds since the user's last input as logind knows it; < 0 unknown.
    [[nodiscard]] double idleSeconds(double nowUnixSeconds) const;

    // Takes one reading (the D-Bus reply handler calls it; tests call it directly).
    void accept(bool idleHint, quint64 idleSinceMicroseconds);
    [[nodiscard]] bool trusted() const { return m_seenIdle; }

  private:
    void refresh();

    QTimer m_timer;
    bool m_have = false;
    bool m_seenIdle = false;
    bool m_idle = false;
    double m_idleSince = 0.0; // unix seconds
    bool m_reportedFailure = false;
};

} // namespace dedloc::ui
