// `dedloc --local-swarm 2` (app/dedloc/LocalSwarm.h), the README's main job, as a user runs it:
// in a terminal (its own process group), headless or with the window (offscreen), then stopped
// as a session ends: Ctrl-C (SIGINT to the whole foreground group), SIGTERM to the app (kill,
// logout), SIGHUP (the terminal closed), the X server closing under the window (Xvfb here). Every peer must stop once, cleanly: exit 0, no
// "second interrupt", no peer left running, and each trainer's newest checkpoint is the last
// step it reported. Also: the swarm options the
// launcher passes on to its trainers (their command lines), and a trainer's wait for --min-peers.
#include "SwarmHarness.h"
#include "train/Checkpoint.h"

#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <fstream>
#include <sstream>

#include <unistd.h>

using namespace dedloc;
using namespace dedloc::test;

namespace {

// The command lines of the running processes whose parent is `parent` (from /proc).
std::vector<QStringList> childCommandLines(qint64 parent)
{
    std::vector<QStringList> out;
    std::error_code ec;
    for (const auto &e : std::filesystem::directory_iterator("/proc", ec)) {
        std::string stat;
        std::getline(std::ifstream(e.path() / "stat"), stat);
        const auto close = stat.rfind(')'); // "pid (comm) state ppid ..."; comm may hold spaces
        if (close == std::string::npos || close + 2 >= stat.size())
            continue;
        std::istringstream rest(stat.substr(close + 2));
        char state = 0;
        qint64 ppid = -1;
        if (!(rest >> state >> ppid) || ppid != parent)
            continue;
        std::ifstream cmdline(e.path() / "cmdline", std::ios::binary);
        QStringList args;
        for (std::string arg; std::getline(cmdline, arg, '\0');)
            args << QString::fromStdString(arg);
        out.push_back(args);
    }
    return out;
}

// The pids of the running processes whose command line names `path` (a peer's data directory).
std::vector<int> processesNaming(const std::filesystem::path &path)
{
    std::vector<int> out;
    std::error_code ec;
    for (const auto &e : std::filesystem::directory_iterator("/proc", ec)) {
        const auto name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos)
            continue;
        std::ifstream in(e.path() / "cmdline", std::ios::binary);
        const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (cmdline.find(path.string()) != std::string::npos)
            out.push_back(std::stoi(name));
    }
    return out;
}

// The value after the last `option` in `args` (a repeated option's last value is the one taken).
QString lastValue(const QStringList &args, const QString &option)
{
    const auto i = args.lastIndexOf(option);
    return i >= 0 && i + 1 < args.size() ? args[i + 1] : QString();
}

// `dedloc --local-swarm N` on a fresh tiny run in `root` (its own process group, as a
// terminal's foreground job), its metrics in root/metrics, with `extra` options. Returns the
// run manifest.
std::filesystem::path startLocalSwarm(QProcess &swarm, const std::filesystem::path &root, int trainers, const QStringList &extra)
{
    std::filesystem::create_directories(root / "run");
    const auto manifest = writeSignedTinyRun(root / "run", 32);
    swarm.setProcessChannelMode(QProcess::MergedChannels);
    swarm.setChildProcessModifier([] { ::setpgid(0, 0); });
    swarm.start(QStringLiteral(DEDLOC_APP),
                QStringList{QStringLiteral("--local-swarm"), QString::number(trainers),
                            QStringLiteral("--manifest"), QString::fromStdString(manifest.string()),
                            QStringLiteral("--data-dir"), QString::fromStdString((root / "data").string()),
                            QStringLiteral("--dht-port"), QString::number(freeUdpPort()), QStringLiteral("--metrics-dir"),
                            QString::fromStdString((root / "metrics").string())}
                    + extra);
    return manifest;
}

} // namespace

class TestLocalSwarm final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Every way a volunteer's session ends: Ctrl-C in the terminal (SIGINT to the foreground
    // group), `kill` or a logout's SIGTERM to the window's process (the window is one of the
    // trainers and launches the rest), and a closed terminal's SIGHUP.
    void everyPeerStopsOnceWithAFinalCheckpoint_data()
    {
        QTest::addColumn<bool>("window");
        QTest::addColumn<int>("signal");
        QTest::addColumn<bool>("toGroup");
        QTest::newRow("headless, Ctrl-C to the terminal's group") << false << int(SIGINT) << true;
        QTest::newRow("window, SIGTERM to the app") << true << int(SIGTERM) << false;
        QTest::newRow("headless, SIGHUP to the app") << false << int(SIGHUP) << false;
        // signal 0: no signal; the X server the window is on goes away (a logout that closes the
        // display first), and Qt would end the process at once.
        QTest::newRow("window on X11, the display closes") << true << 0 << false;
    }

    void everyPeerStopsOnceWithAFinalCheckpoint()
    {
        QFETCH(bool, window);
        QFETCH(int, signal);
        QFETCH(bool, toGroup);
        QTemporaryDir tmp;
        const std::filesystem::path root = tmp.path().toStdString();
        const auto data = root / "data", metrics = root / "metrics";
        QProcess swarm, xvfb;
        QString display;
        if (signal == 0) {
            const QString program = QStandardPaths::findExecutable(QStringLiteral("Xvfb"));
            if (program.isEmpty())
                QSKIP("Xvfb is not installed (installers/install-deps.sh installs it)");
            // -displayfd: Xvfb picks a free display and writes its number to stdout when ready.
            xvfb.start(program, {QStringLiteral("-displayfd"), QStringLiteral("1"), QStringLiteral("-nolisten"), QStringLiteral("tcp")});
            QVERIFY(xvfb.waitForStarted(10000));
            QVERIFY(QTest::qWaitFor([&] { display += QString::fromLatin1(xvfb.readAllStandardOutput()); return display.contains('\n'); }, 20000));
            display = QLatin1Char(':') + display.trimmed();
        }
        if (window) { // the window offscreen (or on Xvfb), its settings and log in the temporary directory
            auto env = QProcessEnvironment::systemEnvironment();
            env.insert(QStringLiteral("QT_QPA_PLATFORM"), display.isEmpty() ? QStringLiteral("offscreen") : QStringLiteral("xcb"));
            if (!display.isEmpty())
                env.insert(QStringLiteral("DISPLAY"), display);
            env.insert(QStringLiteral("XDG_CONFIG_HOME"), tmp.filePath(QStringLiteral("config")));
            env.insert(QStringLiteral("XDG_DATA_HOME"), tmp.filePath(QStringLiteral("share")));
            swarm.setProcessEnvironment(env);
        }
        QStringList extra{QStringLiteral("--status-interval"), QStringLiteral("0")};
        if (!window)
            extra << QStringLiteral("--headless");
        const auto manifest = startLocalSwarm(swarm, root, 2, extra);
        QVERIFY(swarm.waitForStarted(10000));
        QString output;
        auto enoughSteps = [&] {
            swarm.waitForReadyRead(100);
            output += QString::fromLocal8Bit(swarm.readAll());
            return metricsEvents(metrics / "trainer-1.jsonl").size() >= 2 && metricsEvents(metrics / "trainer-2.jsonl").size() >= 2;
        };
        QVERIFY2(SwarmHarness::waitFor(enoughSteps, 180), qPrintable(output.right(3000)));

        const auto pid = static_cast<pid_t>(swarm.processId());
        if (signal == 0) {
            xvfb.terminate();
            QVERIFY(xvfb.waitForFinished(10000));
        } else
            QCOMPARE(::kill(toGroup ? -pid : pid, signal), 0);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
        while (swarm.state() != QProcess::NotRunning && std::chrono::steady_clock::now() < deadline) {
            swarm.waitForFinished(200);
            output += QString::fromLocal8Bit(swarm.readAll());
        }
        output += QString::fromLocal8Bit(swarm.readAll());
        QVERIFY2(swarm.state() == QProcess::NotRunning, qPrintable(output.right(3000)));
        QCOMPARE(swarm.exitStatus(), QProcess::NormalExit);
        QVERIFY2(swarm.exitCode() == 0, qPrintable(output.right(3000)));
        QVERIFY2(processesNaming(data).empty(), "a peer of the swarm outlived its launcher");
        QVERIFY2(!output.contains(QStringLiteral("second interrupt")), qPrintable(output.right(3000)));

        const auto runId = nlohmann::json::parse(std::ifstream(manifest)).at("run_id").get<std::string>();
        for (const char *name : {"trainer-1", "trainer-2"}) {
            const auto file = metrics / (std::string(name) + ".jsonl");
            QVERIFY(!metricsEvents(file).empty());
            const long last = lastEpoch(file);
            const auto dir = data / "local-swarm" / name / "runs" / runId;
            auto checkpoint = CheckpointStore(dir).loadNewestGood();
            QVERIFY2(checkpoint.has_value(), name);
            QCOMPARE(checkpoint->meta.at("step").get<long>(), last); // saved on the way out, not only every N steps
            for (const auto &e : std::filesystem::directory_iterator(dir))
                QVERIFY2(e.path().filename().string().find(".tmp") == std::string::npos, e.path().c_str());
        }
    }

    // --min-peers, --threads and --bandwidth reach the trainers the launcher starts. With one
    // trainer and --min-peers 2 nobody else comes: the trainer waits, computes nothing, and its
    // status line says what it waits for.
    void trainersGetTheSwarmOptionsAndShowTheirWait()
    {
        QTemporaryDir tmp;
        const std::filesystem::path root = tmp.path().toStdString();
        const auto metrics = root / "metrics";
        QProcess swarm;
        startLocalSwarm(swarm, root, 1,
                        {QStringLiteral("--headless"), QStringLiteral("--status-interval"), QStringLiteral("1"), QStringLiteral("--min-peers"),
                         QStringLiteral("3"), QStringLiteral("--threads"), QStringLiteral("2"), QStringLiteral("--bandwidth"),
                         QStringLiteral("42"), QStringLiteral("--client-mode")});
        QVERIFY(swarm.waitForStarted(10000));
        QString output;
        // The monitor reduces (--client-mode below), so it counts among the peers here.
        const QString waiting = QStringLiteral("[trainer-1] Connecting (waiting for 3 peers, 2 here) | step 0");
        auto saysItWaits = [&] {
            swarm.waitForReadyRead(100);
            output += QString::fromLocal8Bit(swarm.readAll());
            return output.contains(waiting);
        };
        QVERIFY2(SwarmHarness::waitFor(saysItWaits, 120), qPrintable(output.right(3000)));

        QStringList trainer, monitor;
        for (const auto &args : childCommandLines(swarm.processId()))
            (lastValue(args, QStringLiteral("--role")) == QLatin1String("trainer") ? trainer : monitor) = args;
        QVERIFY2(!trainer.isEmpty() && !monitor.isEmpty(), "no trainer or no monitor among the launcher's children");
        // --client-mode: the trainers connect out only, and the monitor reduces for them.
        QVERIFY(trainer.contains(QStringLiteral("--client-mode")) && !monitor.contains(QStringLiteral("--client-mode")));
        QVERIFY(monitor.contains(QStringLiteral("--reduce")) && !trainer.contains(QStringLiteral("--reduce")));
        QCOMPARE(lastValue(trainer, QStringLiteral("--min-peers")), QStringLiteral("3"));
        QCOMPARE(lastValue(trainer, QStringLiteral("--threads")), QStringLiteral("2"));
        QCOMPARE(lastValue(trainer, QStringLiteral("--bandwidth")), QStringLiteral("42"));
        // --metrics-dir: a step file for each trainer; the monitor takes no steps and has none.
        QCOMPARE(lastValue(trainer, QStringLiteral("--metrics-out")),
                 QString::fromStdString((metrics / "trainer-1.jsonl").string()));
        QVERIFY(!monitor.contains(QStringLiteral("--metrics-out")));
        QCOMPARE(lastValue(monitor, QStringLiteral("--swarm-metrics-out")), QString::fromStdString((metrics / "swarm.jsonl").string()));
        QVERIFY(metricsEvents(metrics / "trainer-1.jsonl").empty()); // nothing computed, no step taken

        QCOMPARE(::kill(-static_cast<pid_t>(swarm.processId()), SIGINT), 0); // Ctrl-C
        QVERIFY(SwarmHarness::waitFor([&] {
            swarm.waitForFinished(100);
            return swarm.state() == QProcess::NotRunning;
        }, 90));
        output += QString::fromLocal8Bit(swarm.readAll());
        QVERIFY2(swarm.exitStatus() == QProcess::NormalExit && swarm.exitCode() == 0, qPrintable(output.right(3000)));
    }
};

QTEST_GUILESS_MAIN(TestLocalSwarm)
#include "tst_localswarm.moc"
