#include "ScreenAwakeProbe.h"

#include "util/Log.h"

#include <QDBusMessage>
#include <QDBusObjectPath>
#include <QDBusPendingCallWatcher>
#include <QDBusPendingReply>

#include <functional>
#include <vector>

namespace dedloc::ui {

namespace {

constexpr int kCallTimeoutMs = 2000;
constexpr uint kGnomeIdleFlag = 8;
constexpr uint kKdeChangeScreenSettings = 4;

const QString kGnomeService = QStringLiteral("org.gnome.SessionManager");
const QString kGnomePath = QStringLiteral("/org/gnome/SessionManager");
const QString kGnomeInhibitor = QStringLiteral("org.gnome.SessionManager.Inhibitor");
const QString kKdeService = QStringLiteral("org.kde.Solid.PowerManagement.PolicyAgent");
const QString kKdePath = QStringLiteral("/org/kde/Solid/PowerManagement/PolicyAgent");

} // namespace

// One GetInhibitors answer being resolved: replies still due and the idle inhibitors' names.
struct ScreenAwakeProbe::GnomeQuery {
    int outstanding = 0;
    std::vector<std::string> names;
};

ScreenAwakeProbe::ScreenAwakeProbe(QDBusConnection bus, int refreshMs, QObject *parent)
    : QObject(parent), m_bus(std::move(bus))
{
    connect(&m_timer, &QTimer::timeout, this, &ScreenAwakeProbe::refresh);
    m_timer.start(refreshMs);
    refresh();
}

bool ScreenAwakeProbe::waylandSession()
{
    return qEnvironmentVariable("XDG_SESSION_TYPE") == QLatin1String("wayland") ||
           !qEnvironmentVariable("WAYLAND_DISPLAY").isEmpty();
}

void ScreenAwakeProbe::refresh()
{
    if (m_pending) // the previous query has not ended yet (each call ends within 2 s)
        return;
    if (!m_bus.isConnected()) {
        finish({}, {});
        return;
    }
    m_pending = true;
    askGnome();
}

namespace {

// Calls `method` asynchronously and hands the reply to `done` on this thread.
void callAsync(QObject *owner, QDBusConnection &bus, const QDBusMessage &call,
               std::function<void(QDBusPendingCallWatcher &)> done)
{
    auto *watcher = new QDBusPendingCallWatcher(bus.asyncCall(call, kCallTimeoutMs), owner);
    QObject::connect(watcher, &QDBusPendingCallWatcher::finished, owner,
                     [done = std::move(done)](QDBusPendingCallWatcher *w) {
                         w->deleteLater();
                         done(*w);
                     });
}

} // namespace

void ScreenAwakeProbe::askGnome()
{
    const auto call = QDBusMessage::createMethodCall(kGnomeService, kGnomePath, kGnomeService, QStringLiteral("GetInhibitors"));
    callAsync(this, m_bus, call, [this](QDBusPendingCallWatcher &w) {
        const QDBusPendingReply<QList<QDBusObjectPath>> reply = w;
        if (reply.isError()) {
            askKde();
            return;
        }
        const auto paths = reply.value();
        if (paths.isEmpty()) {
            finish(QStringLiteral("gnome"), {});
            return;
        }
        auto query = std::make_shared<GnomeQuery>();
        query->outstanding = static_cast<int>(paths.size());
        for (const auto &path : paths)
            askGnomeInhibitor(query, path.path());
    });
}

void ScreenAwakeProbe::askGnomeInhibitor(const std::shared_ptr<GnomeQuery> &query, const QString &path)
{
    // Ends one inhibitor's part; the last one ends the query.
    auto settle = [this, query] {
        if (--query->outstanding > 0)
            return;
        finish(QStringLiteral("gnome"), query->names.empty() ? std::string() : query->names.front());
    };
    const auto flagsCall = QDBusMessage::createMethodCall(kGnomeService, path, kGnomeInhibitor, QStringLiteral("GetFlags"));
    callAsync(this, m_bus, flagsCall, [this, query, path, settle](QDBusPendingCallWatcher &w) {
        const QDBusPendingReply<uint> flags = w;
        if (flags.isError() || (flags.value() & kGnomeIdleFlag) == 0) {
            settle(); // gone since the list, or it inhibits something else (suspend, logout)
            return;
        }
        const auto idCall = QDBusMessage::createMethodCall(kGnomeService, path, kGnomeInhibitor, QStringLiteral("GetAppId"));
        callAsync(this, m_bus, idCall, [query, settle](QDBusPendingCallWatcher &idWatcher) {
            const QDBusPendingReply<QString> id = idWatcher;
            const QString name = id.isError() ? QString() : id.value().trimmed().left(64);
            query->names.push_back(name.isEmpty() ? "a program" : name.toStdString());
            settle();
        });
    });
}

void ScreenAwakeProbe::askKde()
{
    auto call = QDBusMessage::createMethodCall(kKdeService, kKdePath, kKdeService, QStringLiteral("HasInhibition"));
    call << kKdeChangeScreenSettings;
    callAsync(this, m_bus, call, [this](QDBusPendingCallWatcher &w) {
        const QDBusPendingReply<bool> reply = w;
        if (reply.isError()) {
            finish({}, {});
            return;
        }
        finish(QStringLiteral("kde"), reply.value() ? "a program" : std::string());
    });
}

void ScreenAwakeProbe::finish(const QString &desktop, std::string program)
{
    m_pending = false;
    ++m_queries;
    if (desktop.isEmpty() && !m_reportedNone) {
        m_reportedNone = true;
        log::info("system", "no desktop session lists idle inhibitors (GNOME or KDE): "
                            "full-screen Wayland programs are not seen");
    }
    if (!desktop.isEmpty() && desktop != m_desktop)
        log::info("system", "full-screen Wayland programs seen through " + desktop.toStdString() +
                                "'s idle inhibitors");
    m_desktop = desktop;
    m_program = std::move(program);
}

} // namespace dedloc::ui
