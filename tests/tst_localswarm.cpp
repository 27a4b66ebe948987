// `dedloc --local-swarm 2 --headless` (app/dedloc/LocalSwarm.h), the README's main job, as a user
// runs it in a terminal: started in its own process group, then Ctrl-C, i.e. SIGINT to the
// whole foreground group. Every peer must stop once, cleanly: exit 0, no "second interrupt",
// and each trainer's newest checkpoint is the last step it reported.
#include "SwarmHarness.h"
#include "train/Checkpoint.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <fstream>

#include <unistd.h>

using namespace dedloc;
using namespace dedloc::test;

namespace {

// The step events of a metrics file (complete lines only).
std::vector<nlohmann::json> steps(const std::filesystem::path &file)
{
    std::vector<nlohmann::json> out;
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_object() && j.value("event", std::string()) == "step")
            out.push_back(std::move(j));
    }
    return out;
}

} // namespace

class TestLocalSwarm final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void ctrlCStopsEveryPeerOnceWithAFinalCheckpoint()
    {
        QTemporaryDir tmp;
        const std::filesystem::path root = tmp.path().toStdString();
        std::filesystem::create_directories(root / "run");
        const auto manifest = writeSignedTinyRun(root / "run", 32);
        const auto data = root / "data", metrics = root / "metrics";
        QProcess swarm;
        swarm.setProcessChannelMode(QProcess::MergedChannels);
        swarm.setChildProcessModifier([] { ::setpgid(0, 0); }); // a terminal's foreground group
        swarm.start(QStringLiteral(DEDLOC_APP),
                    {QStringLiteral("--local-swarm"), QStringLiteral("2"), QStringLiteral("--headless"),
                     QStringLiteral("--manifest"), QString::fromStdString(manifest.string()), QStringLiteral("--data-dir"),
                     QString::fromStdString(data.string()), QStringLiteral("--dht-port"), QString::number(freeUdpPort()),
                     QStringLiteral("--metrics-dir"), QString::fromStdString(metrics.string()),
                     QStringLiteral("--status-interval"), QStringLiteral("0")});
        QVERIFY(swarm.waitForStarted(10000));
        QString output;
        auto enoughSteps = [&] {
            swarm.waitForReadyRead(100);
            output += QString::fromLocal8Bit(swarm.readAll());
            return steps(metrics / "trainer-1.jsonl").size() >= 2 && steps(metrics / "trainer-2.jsonl").size() >= 2;
        };
        QVERIFY2(SwarmHarness::waitFor(enoughSteps, 180), qPrintable(output.right(3000)));

        QCOMPARE(::kill(-static_cast<pid_t>(swarm.processId()), SIGINT), 0); // Ctrl-C
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
        while (swarm.state() != QProcess::NotRunning && std::chrono::steady_clock::now() < deadline) {
            swarm.waitForFinished(200);
            output += QString::fromLocal8Bit(swarm.readAll());
        }
        output += QString::fromLocal8Bit(swarm.readAll());
        QVERIFY2(swarm.state() == QProcess::NotRunning, qPrintable(output.right(3000)));
        QCOMPARE(swarm.exitStatus(), QProcess::NormalExit);
        QVERIFY2(swarm.exitCode() == 0, qPrintable(output.right(3000)));
        QVERIFY2(!output.contains(QStringLiteral("second interrupt")), qPrintable(output.right(3000)));

        const auto runId = nlohmann::json::parse(std::ifstream(manifest)).at("run_id").get<std::string>();
        for (const char *name : {"trainer-1", "trainer-2"}) {
            const auto events = steps(metrics / (std::string(name) + ".jsonl"));
            QVERIFY(!events.empty());
            const long last = events.back().at("step").get<long>();
            const auto dir = data / "local-swarm" / name / "runs" / runId;
            auto checkpoint = CheckpointStore(dir).loadNewestGood();
            QVERIFY2(checkpoint.has_value(), name);
            QCOMPARE(checkpoint->meta.at("step").get<long>(), last); // saved on the way out, not only every N steps
            for (const auto &e : std::filesystem::directory_iterator(dir))
                QVERIFY2(e.path().filename().string().find(".tmp") == std::string::npos, e.path().c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestLocalSwarm)
#include "tst_localswarm.moc"
