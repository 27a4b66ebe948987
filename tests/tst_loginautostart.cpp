// "Start DeDLOC when I log in" (ui/LoginAutostart.h): the XDG autostart entry is written with the
// executable quoted as the Desktop Entry Specification asks, read back (Hidden=true is off),
// removed, and refused with a reason where the directory cannot be made; the Settings dialog's
// check box writes and removes it. XDG_CONFIG_HOME points into a temporary directory.
#include "LoginAutostart.h"
#include "Settings.h"
#include "SettingsDialog.h"

#include <QCheckBox>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using namespace dedloc::ui;

namespace {

QStringList lines(const QString &file)
{
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text))
        return {};
    return QString::fromUtf8(f.readAll()).split(u'\n', Qt::SkipEmptyParts);
}

} // namespace

class TestLoginAutostart final : public QObject {
    Q_OBJECT

  private:
    QTemporaryDir m_dir;

  private Q_SLOTS:
    void init()
    {
        qputenv("XDG_CONFIG_HOME", m_dir.filePath(QStringLiteral("config")).toUtf8());
        QFile::remove(loginAutostartFile());
    }

    void writtenReadAndRemoved()
    {
        QCOMPARE(loginAutostartFile(), m_dir.filePath(QStringLiteral("config/autostart/dedloc.desktop")));
        QVERIFY(!loginAutostartEnabled());
        QString error;
        QVERIFY2(setLoginAutostart(true, QStringLiteral("/usr/bin/dedloc"), &error), qPrintable(error));
        QVERIFY(loginAutostartEnabled());
        const auto entry = lines(loginAutostartFile());
        QCOMPARE(entry.value(0), QStringLiteral("[Desktop Entry]"));
        QVERIFY(entry.contains(QStringLiteral("Type=Application")));
        QVERIFY(entry.contains(QStringLiteral("Exec=/usr/bin/dedloc --in-tray --join")));

        // Turned off from the desktop's own startup settings: Hidden=true.
        QFile f(loginAutostartFile());
        QVERIFY(f.open(QIODevice::Append | QIODevice::Text));
        f.write("Hidden=true\n");
        f.close();
        QVERIFY(!loginAutostartEnabled());

        QVERIFY(setLoginAutostart(false, QString(), &error));
        QVERIFY(!QFile::exists(loginAutostartFile()));
        QVERIFY(setLoginAutostart(false, QString(), &error)); // already off
    }

    void theExecutableIsQuoted()
    {
        QString error;
        QVERIFY(setLoginAutostart(true, QStringLiteral("/home/anna/My Apps/$HOME \"x\"/dedloc%"), &error));
        QVERIFY2(lines(loginAutostartFile()).contains(QStringLiteral("Exec=\"/home/anna/My Apps/\\$HOME \\\"x\\\"/dedloc%%\" --in-tray --join")),
                 qPrintable(lines(loginAutostartFile()).join(u'|')));
    }

    void anUnwritablePlaceIsAClearError()
    {
        QFile blocker(m_dir.filePath(QStringLiteral("file-not-dir")));
        QVERIFY(blocker.open(QIODevice::WriteOnly));
        blocker.close();
        qputenv("XDG_CONFIG_HOME", blocker.fileName().toUtf8()); // a file where the directory should be
        QString error;
        QVERIFY(!setLoginAutostart(true, QStringLiteral("/usr/bin/dedloc"), &error));
        QVERIFY2(error.startsWith(QStringLiteral("cannot create")), qPrintable(error));
        QVERIFY(!loginAutostartEnabled());
    }

    void theSettingsDialogTurnsItOnAndOff()
    {
        auto settings = Settings::forTesting(m_dir.filePath(QStringLiteral("s.ini")));
        {
            SettingsDialog dialog(*settings);
            auto *box = dialog.findChild<QCheckBox *>(QStringLiteral("startAtLogin"));
            QVERIFY(box && !box->isChecked());
            box->setChecked(true);
            dialog.apply();
        }
        QVERIFY(loginAutostartEnabled());
        QVERIFY(lines(loginAutostartFile()).contains(QStringLiteral("Exec=%1 --in-tray --join").arg(QCoreApplication::applicationFilePath())));
        SettingsDialog dialog(*settings);
        auto *box = dialog.findChild<QCheckBox *>(QStringLiteral("startAtLogin"));
        QVERIFY(box->isChecked()); // read back from the file
        box->setChecked(false);
        dialog.apply();
        QVERIFY(!QFile::exists(loginAutostartFile()));
    }
};

QTEST_MAIN(TestLoginAutostart)
#include "tst_loginautostart.moc"
