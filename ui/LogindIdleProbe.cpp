#include "LogindIdleProbe.h"

#include "util/Log.h"

#include <QDBusConnection>
#include <QDBusMessage>
#include <QDBusPendingCallWatcher>
#include <QDBusPendingReply>
#include <QDBusVariant>

#include <algorithm>

namespace dedloc::ui {

LogindIdleProbe::LogindIdleProbe(QObject *parent, int refreshMs, bool query) : QObject(parent)
{
    if (!query)
        return;
    connect(&m_timer, &QTimer::timeout, this, &LogindIdleProbe::refresh);
    m_timer.start(refreshMs);
    refresh();
}

double LogindIdleProbe::idleSeconds(double now) const
{
    if (!m_have || !m_seenIdle)
        return -1.0;
    return m_idle ? std::max(0.0, now - m_idleSince) : 0.0;
}

void LogindIdleProbe::accept(bool idleHint, quint64 idleSinceMicroseconds)
{
    m_have = true;
    m_idle = idleHint;
    m_idleSince = double(idleSinceMicroseconds) / 1e6;
    if (idleHint && !m_seenIdle) {
        m_seenIdle = true;
        log::info("system", "logind reports idle time: the \"while I use the computer\" rule can work");
    }
}

void LogindIdleProbe::refresh()
{
    auto bus = QDBusConnection::systemBus();
    if (!bus.isConnected()) {
        if (!m_reportedFailure)
            log::info("system", "no D-Bus system bus: user idle time unknown");
        m_reportedFailure = true;
        m_timer.stop();
        return;
    }
    auto call = QDBusMessage::createMethodCall("org.freedesktop.login1", "/org/freedesktop/login1/session/auto",
                                               "org.freedesktop.DBus.Properties", "GetAll");
    call << QStringLiteral("org.freedesktop.login1.Session");
    auto *watcher = new QDBusPendingCallWatcher(bus.asyncCall(call, 2000), this);
    connect(watcher, &QDBusPendingCallWatcher::finished, this, [this](QDBusPendingCallWatcher *w) {
        w->deleteLater();
        const QDBusPendingReply<QVariantMap> reply = *w;
        if (reply.isError()) {
            if (!m_reportedFailure)
                log::info("system", "logind session not readable (" + reply.error().message().toStdString() +
                                        "): user idle time unknown");
            m_reportedFailure = true;
            return;
        }
        const auto map = reply.value();
        accept(map.value("IdleHint").toBool(), map.value("IdleSinceHint").toULongLong());
    });
}

} // namespace dedloc::ui
