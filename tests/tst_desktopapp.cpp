// runDesktopApp (ui/DesktopApp.h), the function app/dedloc calls: with a fake peer it joins at
// start, saves the screenshot after the given delay, quits, stops the peer, and keeps its settings
// and log in the standard locations (here redirected to a temporary XDG home).
#include "DesktopApp.h"
#include "FakePeer.h"
#include "LogModel.h"

#include <QApplication>
#include <QFile>
#include <QImage>
#include <QStandardPaths>
#include <QTimer>
#include <QtTest>

using namespace dedloc;
using namespace dedloc::ui;

class TestDesktopApp final : public QObject {
    Q_OBJECT

  private:
    QTemporaryDir m_home;

  private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_home.isValid());
        qputenv("XDG_CONFIG_HOME", m_home.filePath("config").toUtf8());
        qputenv("XDG_DATA_HOME", m_home.filePath("data").toUtf8());
    }

    void joinScreenshotQuit()
    {
        test::FakePeer peer;
        RunInfo run;
        run.runId = "fake-run";
        run.name = "Fake run";
        DesktopRunOptions options;
        options.joinAtStart = true;
        options.screenshotPath = m_home.filePath("window.png");
        options.screenshotAfterSeconds = 1.5;
        const int code = runDesktopApp(*qApp, peer, run, options);
        QCOMPARE(code, 0);
        QCOMPARE(QGuiApplication::desktopFileName(), QString("dedloc"));
        const QImage shot(options.screenshotPath);
        QVERIFY(!shot.isNull());
        QVERIFY(shot.width() >= 800);
        QCOMPARE(peer.snapshot().state, PeerState::Stopped); // peer.stop() after the loop
        QVERIFY(peer.samplesComputed() > 0);                 // it trained before the screenshot

        const QString settingsFile = m_home.filePath("config/dedloc/dedloc.conf");
        QVERIFY2(QFile::exists(settingsFile), qPrintable(settingsFile));
        QFile log(LogModel::defaultLogFile());
        QVERIFY2(log.open(QIODevice::ReadOnly), qPrintable(log.fileName()));
        QVERIFY(log.fileName().startsWith(m_home.filePath("data")));
        const auto text = log.readAll();
        QVERIFY(text.contains("I ui: joining the run"));
        QVERIFY(text.contains("screenshot written to"));
    }

    // DeDLOC > Quit ends the app while the window is on screen. Qt 6's quit() asks the windows
    // to close first, and the main window refuses (it hides to the tray, or stays and says why),
    // so a Quit wired to quit() did nothing.
    void quitFromTheMenuEndsTheApp()
    {
        test::FakePeer peer;
        RunInfo run;
        run.runId = "fake-run";
        QTimer::singleShot(1000, qApp, [] {
            for (QWidget *w : QApplication::topLevelWidgets())
                if (w->isVisible())
                    for (QAction *a : w->findChildren<QAction *>())
                        if (a->text() == QStringLiteral("&Quit"))
                            a->trigger();
        });
        QTimer::singleShot(20000, qApp, [] { QCoreApplication::exit(3); }); // the quit was lost
        DesktopRunOptions options;
        options.joinAtStart = true;
        const int code = runDesktopApp(*qApp, peer, run, options);
        QCOMPARE(code, 0);
        QCOMPARE(peer.snapshot().state, PeerState::Stopped);
    }
};

QTEST_MAIN(TestDesktopApp)
#include "tst_desktopapp.moc"
