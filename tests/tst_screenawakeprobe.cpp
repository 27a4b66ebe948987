// ScreenAwakeProbe (ui/ScreenAwakeProbe.h) over a real D-Bus: a private dbus-daemon started here,
// on which this test plays GNOME's session manager (with its inhibitor objects) or KDE's
// PowerDevil policy agent. Only idle inhibitors count (not suspend-only ones), the program is
// named by GNOME's app id, KDE's answer counts without a name, nothing known without either
// desktop, and a session manager that never answers neither blocks nor leaves a stale answer.
#include "ScreenAwakeProbe.h"
#include "support/PrivateBus.h"

#include <QDBusConnection>
#include <QDBusContext>
#include <QDBusMessage>
#include <QDBusObjectPath>
#include <QElapsedTimer>
#include <QProcess>
#include <QStandardPaths>
#include <QtTest>

#include <memory>

using namespace dedloc::ui;

namespace {

class FakeInhibitor final : public QObject {
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "org.gnome.SessionManager.Inhibitor")

  public:
    FakeInhibitor(uint flags, QString app) : m_flags(flags), m_app(std::move(app)) {}

  public Q_SLOTS:
    Q_SCRIPTABLE uint GetFlags() { return m_flags; }
    Q_SCRIPTABLE QString GetAppId() { return m_app; }

  private:
    uint m_flags;
    QString m_app;
};

class FakeGnomeSession final : public QObject, protected QDBusContext {
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "org.gnome.SessionManager")

  public:
    QList<QDBusObjectPath> inhibitors;
    bool hang = false; // never answer GetInhibitors

  public Q_SLOTS:
    Q_SCRIPTABLE QList<QDBusObjectPath> GetInhibitors()
    {
        if (hang)
            setDelayedReply(true); // and no reply is ever sent
        return inhibitors;
    }
};

class FakeKdePolicyAgent final : public QObject {
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "org.kde.Solid.PowerManagement.PolicyAgent")

  public:
    uint heldPolicies = 0; // 1 InterruptSession, 4 ChangeScreenSettings

  public Q_SLOTS:
    Q_SCRIPTABLE bool HasInhibition(uint policies) { return (heldPolicies & policies) != 0; }
};

const QString kGnome = QStringLiteral("org.gnome.SessionManager");
const QString kKde = QStringLiteral("org.kde.Solid.PowerManagement.PolicyAgent");

} // namespace

class TestScreenAwakeProbe final : public QObject {
    Q_OBJECT

    dedloc::test::PrivateBus m_bus;
    QString m_address;
    FakeGnomeSession m_gnome;
    FakeKdePolicyAgent m_kde;
    std::vector<std::unique_ptr<FakeInhibitor>> m_inhibitors;

    QDBusConnection server() { return QDBusConnection::connectToBus(m_address, QStringLiteral("server")); }
    QDBusConnection client() { return QDBusConnection::connectToBus(m_address, QStringLiteral("client")); }

    void addInhibitor(uint flags, const QString &app)
    {
        const auto path = QStringLiteral("/org/gnome/SessionManager/Inhibitor%1").arg(m_inhibitors.size() + 1);
        m_inhibitors.push_back(std::make_unique<FakeInhibitor>(flags, app));
        QVERIFY(server().registerObject(path, m_inhibitors.back().get(), QDBusConnection::ExportScriptableSlots));
        m_gnome.inhibitors.push_back(QDBusObjectPath(path));
    }

    // Waits for two more completed queries: the answer then reflects the fakes' present state.
    static void settle(ScreenAwakeProbe &probe)
    {
        const int from = probe.queries();
        QTRY_VERIFY_WITH_TIMEOUT(probe.queries() >= from + 2, 10000);
    }

  private Q_SLOTS:
    void initTestCase()
    {
        if (const auto why = dedloc::test::PrivateBus::missing(); !why.isEmpty())
            QSKIP(qPrintable(why));
        QVERIFY(m_bus.start());
        m_address = m_bus.address();
        QVERIFY(server().isConnected());
        QVERIFY(client().isConnected());
        QVERIFY(server().registerObject(QStringLiteral("/org/gnome/SessionManager"), &m_gnome, QDBusConnection::ExportScriptableSlots));
        QVERIFY(server().registerObject(QStringLiteral("/org/kde/Solid/PowerManagement/PolicyAgent"), &m_kde,
                                        QDBusConnection::ExportScriptableSlots));
    }

    void cleanupTestCase()
    {
        QDBusConnection::disconnectFromBus(QStringLiteral("client"));
        QDBusConnection::disconnectFromBus(QStringLiteral("server"));
    }

    // Each test starts without either desktop, whatever the previous one left.
    void cleanup()
    {
        server().unregisterService(kGnome);
        server().unregisterService(kKde);
        m_gnome.inhibitors.clear();
        m_gnome.hang = false;
        m_kde.heldPolicies = 0;
    }

    void nothingKnownWithoutADesktop()
    {
        ScreenAwakeProbe probe(client(), 50);
        settle(probe);
        QCOMPARE(probe.desktop(), QString());
        QCOMPARE(probe.program(), std::string());
    }

    void gnomeCountsIdleInhibitorsOnly()
    {
        QVERIFY(server().registerService(kGnome));
        ScreenAwakeProbe probe(client(), 50);
        settle(probe);
        QCOMPARE(probe.desktop(), QStringLiteral("gnome"));
        QCOMPARE(probe.program(), std::string()); // no inhibitors at all

        addInhibitor(4, QStringLiteral("rhythmbox")); // a music player keeps the machine from sleeping
        settle(probe);
        QCOMPARE(probe.program(), std::string());

        addInhibitor(8 | 4, QStringLiteral("steam")); // a game keeps the screen on
        settle(probe);
        QCOMPARE(probe.program(), std::string("steam"));

        addInhibitor(8, QString()); // an inhibitor without an app id still counts
        m_gnome.inhibitors.removeAt(1);
        settle(probe);
        QCOMPARE(probe.program(), std::string("a program"));

        m_gnome.inhibitors.removeLast(); // the game has ended
        settle(probe);
        QCOMPARE(probe.program(), std::string());
    }

    void kdeAnswersWhenGnomeIsMissing()
    {
        QVERIFY(server().registerService(kKde));
        ScreenAwakeProbe probe(client(), 50);
        m_kde.heldPolicies = 1; // suspend only
        settle(probe);
        QCOMPARE(probe.desktop(), QStringLiteral("kde"));
        QCOMPARE(probe.program(), std::string());
        m_kde.heldPolicies = 4 | 1; // the screen kept on
        settle(probe);
        QCOMPARE(probe.program(), std::string("a program"));
        m_kde.heldPolicies = 0;
        settle(probe);
        QCOMPARE(probe.program(), std::string());
    }

    void aSilentSessionManagerNeitherBlocksNorLeavesAStaleAnswer()
    {
        QVERIFY(server().registerService(kGnome));
        addInhibitor(8, QStringLiteral("mpv"));
        ScreenAwakeProbe probe(client(), 50);
        settle(probe);
        QCOMPARE(probe.program(), std::string("mpv"));

        m_gnome.hang = true;
        QElapsedTimer t;
        t.start();
        // Each refresh returns at once; the hung call ends after its 2 s limit, then KDE is asked
        // (absent here): nothing known, not the old "mpv".
        QTRY_VERIFY_WITH_TIMEOUT(probe.desktop().isEmpty(), 10000);
        QVERIFY(t.elapsed() >= 1500);
        QCOMPARE(probe.program(), std::string());
        m_gnome.hang = false;
        settle(probe);
        QCOMPARE(probe.program(), std::string("mpv"));
    }
};

QTEST_GUILESS_MAIN(TestScreenAwakeProbe)
#include "tst_screenawakeprobe.moc"
