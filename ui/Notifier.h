#pragma once
// Desktop notifications for what needs the volunteer: the peer stopped with an error, it paused
// by itself (a game, heat, battery, the schedule) and resumed, a closed run's access token
// expires within TokenWarningSeconds (and once it has expired), and, when the volunteer opts in,
// milestones of samples contributed (every `milestoneSamples`). Sent over D-Bus to the desktop's
// notification server (freedesktop.org Desktop Notifications 1.2: org.freedesktop.Notifications
// .Notify on the session bus; GNOME, KDE, Xfce, dunst, mako serve it); where no server answers,
// through the tray icon's balloon (QSystemTrayIcon::showMessage), else only the log.
//
// Each event notifies once: an error once per distinct message, a pause once per reason (a
// temperature reading that changes does not notify again), a resume only after an automatic
// pause. Manual pauses (the volunteer's own) never notify.
// Threads: GUI thread only; the D-Bus call is asynchronous (answered through the event loop,
// at most 2 s), so a hung server never blocks the window. Errors: a failed or unanswered D-Bus
// call falls back to the tray; never throws.
#include "face/PeerStatus.h"
#include "system/AutoPausePolicy.h"

#include <QObject>
#include <QString>

#include <functional>

namespace dedloc::ui {

class Notifier final : public QObject {
    Q_OBJECT

  public:
    struct Options {
        QString busConnection;        // a QDBusConnection name; "" the session bus
        bool enabled = true;          // Settings: notifications on
        long long milestoneSamples = 0; // > 0: a notification each time this many more were contributed
        std::function<double()> clock; // Unix seconds; empty: the system clock
        // The fallback where D-Bus has no notification server (the tray's balloon); may be empty.
        std::function<void(const QString &summary, const QString &body)> fallback;
    };

    static constexpr double TokenWarningSeconds = 3 * 86400.0;

    explicit Notifier(Options options, QObject *parent = nullptr);

    void setEnabled(bool on) { m_options.enabled = on; }
    void setMilestoneSamples(long long samples) { m_options.milestoneSamples = samples; }

  public Q_SLOTS:
    void onSnapshot(const dedloc::PeerSnapshot &snapshot);
    void onPauseDecision(const dedloc::PauseDecision &decision);

  Q_SIGNALS:
    // Every notification shown (or attempted), with the way it went: "dbus", "tray" or "log".
    void notified(const QString &summary, const QString &body, const QString &via);

  private:
    void notify(const QString &summary, const QString &body);
    void fallBack(const QString &summary, const QString &body); // the tray, else the log

    Options m_options;
    QString m_lastError;
    QString m_lastPauseReason; // "" when not auto-paused
    long long m_lastMilestone = -1;
    int m_tokenNotice = 0; // 1: "expires soon" shown, 2: "expired" shown

    void checkToken(double expiresAt);
};

} // namespace dedloc::ui
