// How `dedloc` stops on signals (app/dedloc/StopSignals.h), with the real program training the
// bundled run alone (--solo, one thread: a micro-batch takes about half a second here): one
// SIGTERM delivered twice within a second (as GNU timeout does, to the process and to its group)
// is one request: the clean way out (the final checkpoint after any step); a second, different signal is a second
// interrupt: an immediate exit without one.
#include "SwarmHarness.h"
#include "TestSupport.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include <csignal>

using namespace dedloc;
using namespace dedloc::test;

namespace {

struct Solo {
    QTemporaryDir tmp;
    std::filesystem::path root{tmp.path().toStdString()};
    std::filesystem::path manifest;
    QProcess process;
    QString output;

    // Starts `dedloc --solo` on the bundled run and waits until it computes (after its first
    // validation, the first micro-batches run).
    bool startTraining()
    {
        manifest = defaultManifest();
        process.setProcessChannelMode(QProcess::MergedChannels);
        process.start(QStringLiteral(DEDLOC_APP),
                      {QStringLiteral("--solo"), QStringLiteral("--manifest"), QString::fromStdString(manifest.string()),
                       QStringLiteral("--data-dir"), QString::fromStdString((root / "data").string()),
                       QStringLiteral("--threads"), QStringLiteral("1")});
        if (!process.waitForStarted(10000))
            return false;
        const bool validated = SwarmHarness::waitFor(
            [&] {
                process.waitForReadyRead(100);
                output += QString::fromLocal8Bit(process.readAll());
                return output.contains(QStringLiteral("step      0 | validation loss"));
            },
            120);
        QThread::msleep(1500); // into the first micro-batches
        return validated;
    }
    bool finish(int seconds)
    {
        const bool done = process.waitForFinished(seconds * 1000);
        output += QString::fromLocal8Bit(process.readAll());
        return done;
    }
};

} // namespace

class TestStopSignals final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void sameSignalTwiceAtOnceIsOneRequest()
    {
        Solo solo;
        QVERIFY2(solo.startTraining(), qPrintable(solo.output.right(2000)));
        const auto pid = static_cast<pid_t>(solo.process.processId());
        QCOMPARE(::kill(pid, SIGTERM), 0);
        QThread::msleep(150); // delivered and handled: the second one is not merged into it
        QCOMPARE(::kill(pid, SIGTERM), 0);
        QVERIFY2(solo.finish(60), qPrintable(solo.output.right(2000)));
        QCOMPARE(solo.process.exitStatus(), QProcess::NormalExit);
        QVERIFY2(solo.process.exitCode() == 0, qPrintable(solo.output.right(2000)));
        QVERIFY2(!solo.output.contains(QStringLiteral("second interrupt")), qPrintable(solo.output.right(2000)));
        // The clean way out: the session ends its loop and says where it stopped.
        QVERIFY2(solo.output.contains(QStringLiteral("stopped at step")), qPrintable(solo.output.right(2000)));
    }

    void aDifferentSecondSignalExitsAtOnce()
    {
        Solo solo;
        QVERIFY2(solo.startTraining(), qPrintable(solo.output.right(2000)));
        const auto pid = static_cast<pid_t>(solo.process.processId());
        // Back to back: a clean stop can finish within a short pause (then the process exits 0
        // before the second signal); pending together, either order is a different second signal.
        QCOMPARE(::kill(pid, SIGTERM), 0);
        QCOMPARE(::kill(pid, SIGINT), 0); // the volunteer insists
        QVERIFY2(solo.finish(60), qPrintable(solo.output.right(2000)));
        QCOMPARE(solo.process.exitCode(), 130);
        QVERIFY2(solo.output.contains(QStringLiteral("second interrupt")), qPrintable(solo.output.right(2000)));
    }
};

QTEST_GUILESS_MAIN(TestStopSignals)
#include "tst_stopsignals.moc"
