#include "Notifier.h"

#include "Format.h"
#include "util/Log.h"

#include <QDBusConnection>
#include <QDBusMessage>
#include <QDBusPendingCallWatcher>
#include <QDBusPendingReply>
#include <QDateTime>
#include <QVariantMap>

namespace dedloc::ui {
namespace {

constexpr int NotifyTimeoutMs = 2000;

// A pause reason without its changing tail (" (resuming after 12 s of quiet)", the reading in
// "GPU at 86 °C"), so that one cause notifies once.
QString pauseKind(const QString &reason)
{
    QString kind = reason;
    if (const int paren = kind.indexOf(QStringLiteral(" (resuming after")); paren >= 0)
        kind.truncate(paren);
    if (kind.startsWith(QStringLiteral("cooling down: GPU")))
        return QStringLiteral("gpu-heat");
    if (kind.startsWith(QStringLiteral("cooling down: CPU")))
        return QStringLiteral("cpu-heat");
    if (kind.startsWith(QStringLiteral("GPU power")))
        return QStringLiteral("gpu-power");
    if (kind.startsWith(QStringLiteral("fan at")))
        return QStringLiteral("fan");
    return kind;
}

} // namespace

Notifier::Notifier(Options options, QObject *parent) : QObject(parent), m_options(std::move(options)) {}

void Notifier::checkToken(double expiresAt)
{
    if (expiresAt <= 0.0)
        return;
    const double now = m_options.clock ? m_options.clock() : double(QDateTime::currentSecsSinceEpoch());
    const double left = expiresAt - now;
    if (left <= 0.0 && m_tokenNotice < 2) {
        m_tokenNotice = 2;
        notify(tr("Your access token has expired"),
               tr("The run no longer accepts this computer. Ask the run's lead for a new token."));
    } else if (left > 0.0 && left <= TokenWarningSeconds && m_tokenNotice < 1) {
        m_tokenNotice = 1;
        notify(tr("Your access token expires soon"),
               tr("It expires in %1. Ask the run's lead for a new token to keep training.").arg(formatDuration(left)));
    }
}

void Notifier::onSnapshot(const PeerSnapshot &s)
{
    checkToken(s.accessTokenExpiresAt);
    if (s.state == PeerState::Error) {
        const QString detail = QString::fromStdString(s.stateDetail);
        if (detail != m_lastError) {
            m_lastError = detail;
            notify(tr("DeDLOC stopped training"), detail);
        }
    } else {
        m_lastError.clear();
    }
    if (m_options.milestoneSamples <= 0)
        return;
    const long long reached = s.allTime.samples / m_options.milestoneSamples;
    if (m_lastMilestone < 0) { // the first snapshot: where we start, not a milestone
        m_lastMilestone = reached;
        return;
    }
    if (reached > m_lastMilestone) {
        m_lastMilestone = reached;
        notify(tr("Thank you!"), tr("Your computer has trained the model on %1 samples.")
                                     .arg(formatCount(reached * m_options.milestoneSamples)));
    }
}

void Notifier::onPauseDecision(const PauseDecision &d)
{
    if (d.paused && d.cause == PauseCause::Automatic) {
        const QString reason = QString::fromStdString(d.reason);
        if (pauseKind(reason) != m_lastPauseReason) {
            m_lastPauseReason = pauseKind(reason);
            notify(tr("DeDLOC paused"), reason);
        }
        return;
    }
    if (!d.paused && !m_lastPauseReason.isEmpty())
        notify(tr("DeDLOC trains again"), tr("The reason to pause has gone."));
    m_lastPauseReason.clear();
}

void Notifier::notify(const QString &summary, const QString &body)
{
    if (!m_options.enabled)
        return;
    const auto bus = m_options.busConnection.isEmpty() ? QDBusConnection::sessionBus()
                                                       : QDBusConnection(m_options.busConnection);
    if (!bus.isConnected()) {
        fallBack(summary, body);
        return;
    }
    auto call = QDBusMessage::createMethodCall(QStringLiteral("org.freedesktop.Notifications"),
                                               QStringLiteral("/org/freedesktop/Notifications"),
                                               QStringLiteral("org.freedesktop.Notifications"), QStringLiteral("Notify"));
    QVariantMap hints;
    hints.insert(QStringLiteral("desktop-entry"), QStringLiteral("dedloc"));
    call << QStringLiteral("DeDLOC") << uint(0) << QStringLiteral("dedloc") << summary << body << QStringList() << hints
         << int(-1);
    // Never wait on the GUI thread: a server that hangs would freeze the window.
    auto *watcher = new QDBusPendingCallWatcher(bus.asyncCall(call, NotifyTimeoutMs), this);
    connect(watcher, &QDBusPendingCallWatcher::finished, this, [this, summary, body](QDBusPendingCallWatcher *w) {
        w->deleteLater();
        const QDBusPendingReply<uint> reply = *w;
        if (reply.isError())
            fallBack(summary, body);
        else
            Q_EMIT notified(summary, body, QStringLiteral("dbus"));
    });
}

void Notifier::fallBack(const QString &summary, const QString &body)
{
    log::info("ui", "notification: " + summary.toStdString() + ": " + body.toStdString());
    if (m_options.fallback) {
        m_options.fallback(summary, body);
        Q_EMIT notified(summary, body, QStringLiteral("tray"));
        return;
    }
    Q_EMIT notified(summary, body, QStringLiteral("log"));
}

} // namespace dedloc::ui
