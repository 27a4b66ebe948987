// Desktop notifications (ui/Notifier.h) over a real D-Bus: a private dbus-daemon started here,
// and a notification server on it (org.freedesktop.Notifications, on its own thread) that
// records what it is asked to show. Each event notifies once (errors per message, automatic
// pauses per cause, resumes after them, opted-in milestones), manual pauses never, nothing when
// switched off; without a server the tray's balloon is used.
#include "Notifier.h"
#include "support/PrivateBus.h"

#include <QDBusConnection>
#include <QProcess>
#include <QStandardPaths>
#include <QThread>
#include <QtTest>

#include <mutex>

using namespace dedloc;
using namespace dedloc::ui;

namespace {

struct Shown {
    QString app, summary, body, desktopEntry;
};

class NotificationServer final : public QObject {
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "org.freedesktop.Notifications")

  public:
    std::mutex mutex;
    std::vector<Shown> shown;
    std::atomic<int> hangMs{0}; // > 0: the next Notify answers only after this long

  public Q_SLOTS:
    Q_SCRIPTABLE uint Notify(const QString &app, uint, const QString &, const QString &summary, const QString &body,
                             const QStringList &, const QVariantMap &hints, int)
    {
        if (const int ms = hangMs.exchange(0); ms > 0)
            QThread::msleep(static_cast<unsigned long>(ms));
        std::lock_guard lock(mutex);
        shown.push_back({app, summary, body, hints.value(QStringLiteral("desktop-entry")).toString()});
        return uint(shown.size());
    }
};

// The server's own connection and event loop, as a desktop's notification server has.
class ServerThread final : public QThread {
  public:
    QString address;
    NotificationServer *server = nullptr;
    std::atomic<bool> ready{false};

  protected:
    void run() override
    {
        auto bus = QDBusConnection::connectToBus(address, QStringLiteral("server"));
        NotificationServer object;
        server = &object;
        bus.registerObject(QStringLiteral("/org/freedesktop/Notifications"), &object, QDBusConnection::ExportScriptableSlots);
        ready = bus.registerService(QStringLiteral("org.freedesktop.Notifications"));
        exec();
        bus.unregisterService(QStringLiteral("org.freedesktop.Notifications"));
        server = nullptr;
        QDBusConnection::disconnectFromBus(QStringLiteral("server"));
    }
};

PauseDecision automatic(const char *reason)
{
    PauseDecision d;
    d.paused = true;
    d.cause = PauseCause::Automatic;
    d.reason = reason;
    return d;
}

PeerSnapshot withSamples(long long samples, PeerState state = PeerState::Training, const char *detail = "")
{
    PeerSnapshot s;
    s.state = state;
    s.stateDetail = detail;
    s.allTime.samples = samples;
    return s;
}

} // namespace

class TestNotifier final : public QObject {
    Q_OBJECT

  private:
    dedloc::test::PrivateBus m_bus;
    ServerThread m_server;

    // What the server showed once `spy` has counted `count` answers and nothing more came.
    std::vector<Shown> shownAfter(QSignalSpy &spy, int count)
    {
        [&] { QTRY_COMPARE(spy.count(), count); }();
        QTest::qWait(100);
        [&] { QCOMPARE(spy.count(), count); }();
        return shown();
    }
    std::vector<Shown> shown()
    {
        std::lock_guard lock(m_server.server->mutex);
        return m_server.server->shown;
    }
    void forget()
    {
        std::lock_guard lock(m_server.server->mutex);
        m_server.server->shown.clear();
    }
    Notifier::Options options()
    {
        Notifier::Options o;
        o.busConnection = QStringLiteral("client");
        return o;
    }

  private Q_SLOTS:
    void initTestCase()
    {
        if (const auto why = dedloc::test::PrivateBus::missing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        QVERIFY(m_bus.start());
        m_server.address = m_bus.address();
        m_server.start();
        QVERIFY(QTest::qWaitFor([&] { return m_server.ready.load(); }, 10000));
        QVERIFY(QDBusConnection::connectToBus(m_server.address, QStringLiteral("client")).isConnected());
    }

    void cleanupTestCase()
    {
        m_server.quit();
        m_server.wait(5000);
        QDBusConnection::disconnectFromBus(QStringLiteral("client"));
    }

    void init() { forget(); }

    void automaticPausesNotifyOncePerCause()
    {
        Notifier n(options());
        QSignalSpy spy(&n, &Notifier::notified);
        n.onPauseDecision(automatic("cooling down: GPU at 86 °C (limit 85 °C)"));
        n.onPauseDecision(automatic("cooling down: GPU at 88 °C (limit 85 °C)")); // the same cause
        n.onPauseDecision(automatic("cooling down: GPU at 79 °C (limit 85 °C) (resuming after 9 s of quiet)"));
        n.onPauseDecision(PauseDecision{}); // resumed
        n.onPauseDecision(PauseDecision{}); // still training: nothing new
        PauseDecision manual;
        manual.paused = true;
        manual.cause = PauseCause::Manual;
        manual.reason = "paused by you";
        n.onPauseDecision(manual); // the volunteer's own pause: no notification
        n.onPauseDecision(PauseDecision{});
        n.onPauseDecision(automatic("mpv is full screen"));
        const auto s = shownAfter(spy, 3);
        QCOMPARE(s.size(), std::size_t(3));
        QCOMPARE(s[0].app, QString("DeDLOC"));
        QCOMPARE(s[0].desktopEntry, QString("dedloc"));
        QCOMPARE(s[0].summary, QString("DeDLOC paused"));
        QCOMPARE(s[0].body, QString("cooling down: GPU at 86 °C (limit 85 °C)"));
        QCOMPARE(s[1].summary, QString("DeDLOC trains again"));
        QCOMPARE(s[2].body, QString("mpv is full screen"));
        QCOMPARE(spy.count(), 3);
        QCOMPARE(spy.at(0).at(2).toString(), QString("dbus"));
    }

    void errorsNotifyOncePerMessage()
    {
        Notifier n(options());
        QSignalSpy spy(&n, &Notifier::notified);
        n.onSnapshot(withSamples(0, PeerState::Error, "the access token expired; ask the lead for a new one"));
        n.onSnapshot(withSamples(0, PeerState::Error, "the access token expired; ask the lead for a new one"));
        n.onSnapshot(withSamples(0, PeerState::Connecting));
        n.onSnapshot(withSamples(0, PeerState::Error, "the access token expired; ask the lead for a new one"));
        const auto s = shownAfter(spy, 2);
        QCOMPARE(s.size(), std::size_t(2));
        QCOMPARE(s[0].summary, QString("DeDLOC stopped training"));
        QCOMPARE(s[0].body, QString("the access token expired; ask the lead for a new one"));
    }

    void milestonesOnlyWhenOptedIn()
    {
        Notifier off(options());
        QSignalSpy offSpy(&off, &Notifier::notified);
        off.onSnapshot(withSamples(500));
        off.onSnapshot(withSamples(50000));
        QVERIFY(shownAfter(offSpy, 0).empty());

        auto o = options();
        o.milestoneSamples = 10000;
        Notifier n(o);
        QSignalSpy spy(&n, &Notifier::notified);
        for (long long samples : {500LL, 9000LL, 10500LL, 12000LL, 31000LL})
            n.onSnapshot(withSamples(samples));
        const auto s = shownAfter(spy, 2);
        QCOMPARE(s.size(), std::size_t(2));
        QCOMPARE(s[0].body, QString("Your computer has trained the model on 10\u2009000 samples."));
        QCOMPARE(s[1].body, QString("Your computer has trained the model on 30\u2009000 samples."));
    }

    void aClosedRunsTokenExpiring()
    {
        double now = 1.8e9;
        auto o = options();
        o.clock = [&] { return now; };
        Notifier n(o);
        QSignalSpy spy(&n, &Notifier::notified);
        PeerSnapshot s;
        s.accessTokenExpiresAt = now + 10 * 86400.0; // ten days: nothing yet
        n.onSnapshot(s);
        QVERIFY(shownAfter(spy, 0).empty());
        now += 8 * 86400.0; // two days left: once
        n.onSnapshot(s);
        n.onSnapshot(s);
        now += 86400.0;
        n.onSnapshot(s);
        now += 86400.0 + 1; // expired: once more
        n.onSnapshot(s);
        n.onSnapshot(s);
        const auto got = shownAfter(spy, 2);
        QCOMPARE(got.size(), std::size_t(2));
        QCOMPARE(got[0].summary, QString("Your access token expires soon"));
        QVERIFY2(got[0].body.startsWith(QString("It expires in 2 d")), qPrintable(got[0].body));
        QCOMPARE(got[1].summary, QString("Your access token has expired"));
        Notifier open(options()); // an open run has no token
        QSignalSpy openSpy(&open, &Notifier::notified);
        open.onSnapshot(PeerSnapshot{});
        QCOMPARE(shownAfter(openSpy, 0).size(), std::size_t(2));
    }

    void switchedOffShowsNothing()
    {
        auto o = options();
        o.enabled = false;
        Notifier n(o);
        QSignalSpy spy(&n, &Notifier::notified);
        n.onPauseDecision(automatic("on battery power"));
        n.onSnapshot(withSamples(0, PeerState::Error, "disk full"));
        QVERIFY(shownAfter(spy, 0).empty());
    }

    void withoutAServerTheTrayShowsIt()
    {
        QString balloon;
        Notifier::Options o;
        o.busConnection = QStringLiteral("no-such-connection"); // not connected
        o.fallback = [&](const QString &summary, const QString &body) { balloon = summary + ": " + body; };
        Notifier n(o);
        QSignalSpy spy(&n, &Notifier::notified);
        n.onPauseDecision(automatic("on battery power"));
        QCOMPARE(balloon, QString("DeDLOC paused: on battery power"));
        QCOMPARE(spy.at(0).at(2).toString(), QString("tray"));
    }

    void aHungServerNeitherBlocksNorLosesTheNotice()
    {
        QString balloon;
        auto o = options();
        o.fallback = [&](const QString &summary, const QString &body) { balloon = summary + ": " + body; };
        Notifier n(o);
        QSignalSpy spy(&n, &Notifier::notified);
        m_server.server->hangMs = 3000; // longer than the Notifier waits for an answer
        n.onPauseDecision(automatic("on battery power"));
        QCOMPARE(spy.count(), 0); // the call returned before any answer: the window goes on
        QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 1, 5000);
        QCOMPARE(spy.at(0).at(2).toString(), QString("tray"));
        QCOMPARE(balloon, QString("DeDLOC paused: on battery power"));
        QTest::qWait(1500); // let the server finish its late answer before the next test
    }
};

QTEST_GUILESS_MAIN(TestNotifier)
#include "tst_notifier.moc"
