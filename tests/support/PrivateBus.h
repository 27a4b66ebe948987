#pragma once
// A private D-Bus session bus for tests: its own dbus-daemon, killed with this object, so that a
// test can play a desktop's services (notifications, the session manager) without touching the
// machine's bus. Header only (QtCore).
#include <QByteArray>
#include <QDeadlineTimer>
#include <QProcess>
#include <QStandardPaths>
#include <QString>
#include <QThread>

namespace dedloc::test {

class PrivateBus final {
  public:
    PrivateBus() = default;
    ~PrivateBus()
    {
        m_daemon.kill();
        m_daemon.waitForFinished(5000);
    }
    PrivateBus(const PrivateBus &) = delete;
    PrivateBus &operator=(const PrivateBus &) = delete;

    // "" when dbus-daemon is installed; otherwise why a test should skip.
    [[nodiscard]] static QString missing()
    {
        return QStandardPaths::findExecutable(QStringLiteral("dbus-daemon")).isEmpty()
                   ? QStringLiteral("dbus-daemon is not installed (installers/install-deps.sh installs it)")
                   : QString();
    }

    // Starts the daemon and waits (up to 10 s) for its address; false if it did not come.
    bool start()
    {
        m_daemon.start(QStandardPaths::findExecutable(QStringLiteral("dbus-daemon")),
                       {QStringLiteral("--session"), QStringLiteral("--nofork"), QStringLiteral("--print-address=1")});
        if (!m_daemon.waitForStarted(10000))
            return false;
        QByteArray address;
        for (QDeadlineTimer deadline(10000); !address.contains('\n') && !deadline.hasExpired();) {
            m_daemon.waitForReadyRead(100);
            address += m_daemon.readAllStandardOutput();
        }
        m_address = QString::fromUtf8(address.trimmed());
        return address.contains('\n');
    }

    // The bus address (QDBusConnection::connectToBus), once started.
    [[nodiscard]] QString address() const { return m_address; }

  private:
    QProcess m_daemon;
    QString m_address;
};

} // namespace dedloc::test
