// `dedloc ctl` (app/dedloc/CtlCommand.h) against the real app, started paused, as a script drives
// it: in the window (offscreen, a local swarm of the window's trainer and a monitor) and headless.
// Status as JSON, pause for 1 h (a timed pause ending an hour from now), resume (samples grow),
// a second start of the app (the window is raised and the second start exits 0; headless, it is
// refused), raise, and quit: the app exits 0 and leaves no peer behind. With the window's local
// swarm, what the monitor recorded of the trainer reaches the status and matches its own record.
#include "SwarmHarness.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <chrono>
#include <fstream>

using namespace dedloc;
using namespace dedloc::test;

namespace {

struct CtlResult {
    int code = -1;
    QString out, err;
};

double unixNow()
{
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Whether a running process's command line names `path`.
bool anyProcessNaming(const std::string &path)
{
    std::error_code ec;
    for (const auto &e : std::filesystem::directory_iterator("/proc", ec)) {
        std::ifstream in(e.path() / "cmdline", std::ios::binary);
        const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (cmdline.find(path) != std::string::npos)
            return true;
    }
    return false;
}

} // namespace

class TestDedlocCtl final : public QObject {
    Q_OBJECT

  private:
    QProcessEnvironment m_env;
    QString m_dataDir;

    CtlResult run(const QStringList &arguments, int seconds = 30)
    {
        QProcess p;
        p.setProcessEnvironment(m_env);
        p.start(QStringLiteral(DEDLOC_APP), arguments);
        CtlResult r;
        if (!p.waitForFinished(seconds * 1000)) {
            p.kill();
            p.waitForFinished();
        }
        r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        r.out = QString::fromLocal8Bit(p.readAllStandardOutput());
        r.err = QString::fromLocal8Bit(p.readAllStandardError());
        return r;
    }
    CtlResult ctl(const QStringList &words) { return run(QStringList{QStringLiteral("ctl")} + words + QStringList{QStringLiteral("--data-dir"), m_dataDir}); }
    nlohmann::json status()
    {
        const auto r = ctl({QStringLiteral("status"), QStringLiteral("--json")});
        if (r.code != 0)
            return nullptr;
        return nlohmann::json::parse(r.out.toStdString(), nullptr, false);
    }

  private Q_SLOTS:
    void scriptsDriveTheRunningApp_data()
    {
        QTest::addColumn<bool>("window");
        QTest::newRow("window with its local swarm") << true;
        QTest::newRow("headless") << false;
    }

    void scriptsDriveTheRunningApp()
    {
        QFETCH(bool, window);
        QTemporaryDir tmp;
        const std::filesystem::path root = tmp.path().toStdString();
        std::filesystem::create_directories(root / "run");
        std::filesystem::create_directories(root / "runtime");
        const auto manifest = writeSignedTinyRun(root / "run", 32);
        m_dataDir = QString::fromStdString((root / "data").string());
        m_env = QProcessEnvironment::systemEnvironment();
        m_env.insert(QStringLiteral("XDG_RUNTIME_DIR"), QString::fromStdString((root / "runtime").string())); // the sockets
        m_env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        m_env.insert(QStringLiteral("XDG_CONFIG_HOME"), tmp.filePath(QStringLiteral("config")));
        m_env.insert(QStringLiteral("XDG_DATA_HOME"), tmp.filePath(QStringLiteral("share")));
        QStringList args{QStringLiteral("--manifest"), QString::fromStdString(manifest.string()), QStringLiteral("--data-dir"),
                         m_dataDir, QStringLiteral("--dht-port"), QString::number(freeUdpPort()), QStringLiteral("--threads"),
                         QStringLiteral("1"), QStringLiteral("--start-paused")};
        args << (window ? QStringList{QStringLiteral("--local-swarm"), QStringLiteral("1")} : QStringList{QStringLiteral("--headless")});
        QProcess app;
        app.setProcessEnvironment(m_env);
        app.setProcessChannelMode(QProcess::MergedChannels);
        app.start(QStringLiteral(DEDLOC_APP), args);
        QVERIFY(app.waitForStarted(10000));
        QString output;
        auto collect = [&] { output += QString::fromLocal8Bit(app.readAll()); };

        // Started paused: it answers, paused by the volunteer, and computes nothing.
        nlohmann::json s;
        QVERIFY2(SwarmHarness::waitFor([&] { collect(); s = status(); return s.is_object() && s.at("state") == "Paused"; }, 120),
                 qPrintable(output.right(3000)));
        QCOMPARE(s.at("window").get<bool>(), window);
        QCOMPARE(s.at("pause").at("cause").get<std::string>(), std::string("manual"));
        QCOMPARE(s.at("you").at("samples").get<long long>(), 0LL);

        // Pause for an hour: a timed pause that ends an hour from now.
        const double asked = unixNow();
        QCOMPARE(ctl({QStringLiteral("pause"), QStringLiteral("--for"), QStringLiteral("1h")}).code, 0);
        s = status();
        QVERIFY(s.is_object());
        QCOMPARE(s.at("pause").at("cause").get<std::string>(), std::string("timed"));
        const double resumesAt = s.at("pause").at("resumes_at").get<double>();
        QVERIFY2(resumesAt >= asked + 3590.0 && resumesAt <= unixNow() + 3600.5, s.dump().c_str());

        // Resume: it trains.
        QCOMPARE(ctl({QStringLiteral("resume")}).code, 0);
        QVERIFY2(SwarmHarness::waitFor([&] {
            collect();
            s = status();
            return s.is_object() && !s.at("pause").at("paused").get<bool>() && s.at("you").at("samples").get<long long>() > 0;
        }, 120), qPrintable(output.right(3000)));

        // With the window's local swarm a monitor runs: what it recorded of this trainer reaches the
        // status, and matches the trainer's own record over the same steps.
        if (window) {
            QVERIFY2(SwarmHarness::waitFor([&] {
                collect();
                s = status();
                return s.is_object() && s.at("monitor").is_object() && s.at("monitor").at("steps").get<long>() >= 2;
            }, 120), qPrintable(output.right(3000)));
            const auto &m = s.at("monitor");
            QVERIFY(m.at("samples").get<long long>() > 0);
            QCOMPARE(m.at("own_samples_in_those_steps").get<long long>(), m.at("samples").get<long long>());
            QCOMPARE(m.at("steps_missed").get<long>(), 0L);
        }

        // A second start of the app: the window is raised (and that start ends at once); headless
        // refuses, as two peers must not share an identity and checkpoints.
        const auto second = run(args, 60);
        const auto raise = ctl({QStringLiteral("raise")});
        if (window) {
            QVERIFY2(second.code == 0 && second.out.contains(QStringLiteral("its window was raised")), qPrintable(second.out + second.err));
            QCOMPARE(raise.code, 0);
        } else {
            QVERIFY2(second.code == 1 && second.err.contains(QStringLiteral("another dedloc runs for this data directory")),
                     qPrintable(second.out + second.err));
            QVERIFY2(raise.code == 1 && raise.err.contains(QStringLiteral("without a window")), qPrintable(raise.err));
        }
        QCOMPARE(app.state(), QProcess::Running); // neither disturbed the first

        // Quit: a clean exit, every peer gone, nothing answers any more.
        QCOMPARE(ctl({QStringLiteral("quit")}).code, 0);
        QVERIFY2(SwarmHarness::waitFor([&] { collect(); app.waitForFinished(100); return app.state() == QProcess::NotRunning; }, 90),
                 qPrintable(output.right(3000)));
        collect();
        QVERIFY2(app.exitStatus() == QProcess::NormalExit && app.exitCode() == 0, qPrintable(output.right(3000)));
        QVERIFY(!anyProcessNaming(m_dataDir.toStdString()));
        const auto after = ctl({QStringLiteral("status")});
        QVERIFY2(after.code == 1 && after.err.contains(QStringLiteral("no dedloc runs for this data directory")), qPrintable(after.err));
    }

    void usageErrors()
    {
        m_env = QProcessEnvironment::systemEnvironment();
        m_dataDir = QStringLiteral("/nonexistent");
        QCOMPARE(ctl({QStringLiteral("reboot")}).code, 2);
        const auto badDuration = ctl({QStringLiteral("pause"), QStringLiteral("--for"), QStringLiteral("soon")});
        QCOMPARE(badDuration.code, 2);
        QVERIFY(badDuration.err.contains(QStringLiteral("--for takes a duration")));
        QCOMPARE(ctl({QStringLiteral("resume"), QStringLiteral("--json")}).code, 2);
    }
};

QTEST_GUILESS_MAIN(TestDedlocCtl)
#include "tst_dedlocctl.moc"
