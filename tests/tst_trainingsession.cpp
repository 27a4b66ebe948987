// The headless session (core/train/TrainingSession.h) end to end on the tiny preset: status
// lines, the JSON-lines metrics format, resume across sessions, and refusal of a tampered run.
#include "TestSupport.h"

#include "model/Tokenizer.h"
#include "net/PeerIdentity.h"
#include "run/RunPaths.h"
#include "train/Checkpoint.h"
#include "train/PeerSetup.h"
#include "train/TrainingSession.h"
#include "util/AtomicFile.h"

#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <sstream>

using namespace dedloc;

namespace {

std::vector<nlohmann::json> readLines(const std::filesystem::path &file)
{
    std::vector<nlohmann::json> out;
    std::istringstream in(readWholeFile(file));
    for (std::string line; std::getline(in, line);)
        out.push_back(nlohmann::json::parse(line));
    return out;
}

} // namespace

class TestTrainingSession final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void trainsWritesMetricsAndResumes()
    {
        QTemporaryDir tmp;
        const std::filesystem::path dir = tmp.path().toStdString();
        auto run = test::tinyRun(dir);
        run.training.validationEveryNSteps = 2;
        writeFileAtomically(dir / "manifest.json", toJson(run));

        SessionOptions o;
        o.manifest = dir / "manifest.json";
        o.dataDir = dir / "data";
        o.metricsOut = dir / "metrics.jsonl";
        o.threads = 1;
        o.allowCuda = false;
        o.maxSteps = 3;
        std::FILE *status = std::tmpfile();
        o.statusOut = status;
        std::atomic<bool> stop{false};
        QCOMPARE(runTrainingSession(o, stop), 0);

        auto lines = readLines(o.metricsOut);
        std::vector<long> steps;
        int validations = 0;
        std::string peer;
        for (const auto &l : lines) {
            QVERIFY(l.contains("time") && l.contains("peer_id") && l.contains("role") && l.contains("step"));
            QCOMPARE(l["role"].get<std::string>(), std::string("trainer"));
            QCOMPARE(l["peer_id"].get<std::string>().size(), std::size_t{32});
            peer = l["peer_id"];
            if (l["event"] == "step") {
                steps.push_back(l["step"].get<long>());
                QCOMPARE(l["samples"].get<long>(), 32L);
                QVERIFY(l["loss"].get<double>() > 0.0 && l["samples_per_s"].get<double>() > 0.0);
                QVERIFY(l["applied"].get<bool>());
            } else {
                QCOMPARE(l["event"].get<std::string>(), std::string("validation"));
                QVERIFY(l["val_loss"].get<double>() > 0.0);
                ++validations;
            }
        }
        QCOMPARE(steps, (std::vector<long>{1, 2, 3}));
        QCOMPARE(validations, 2); // at step 0 and step 2
        std::rewind(status);
        char buffer[4096] = {0};
        const auto n = std::fread(buffer, 1, sizeof buffer - 1, status);
        std::fclose(status);
        QVERIFY(QByteArray(buffer, static_cast<int>(n)).contains("step      3 | loss"));

        // A second session continues from the checkpoint written on exit, as the same peer.
        o.maxSteps = 5;
        o.statusOut = stdout;
        QCOMPARE(runTrainingSession(o, stop), 0);
        lines = readLines(o.metricsOut);
        steps.clear();
        for (const auto &l : lines)
            if (l["event"] == "step")
                steps.push_back(l["step"].get<long>());
        QCOMPARE(steps, (std::vector<long>{1, 2, 3, 4, 5}));
        QCOMPARE(lines.back()["peer_id"].get<std::string>(), peer);

        // Solo state stays solo: the checkpoints are in runs/<run id>/solo, and a swarm peer of
        // the same data directory (it restores from runs/<run id>) starts at the swarm's epoch 0,
        // not at the solo step 5.
        run = loadRunManifest(o.manifest);
        QCOMPARE(CheckpointStore(soloDataDir(o.dataDir, run.runId)).loadNewestGood()->meta.at("step").get<long>(), 5L);
        QVERIFY(!CheckpointStore(runDataDir(o.dataDir, run.runId)).loadNewestGood().has_value());
        const Tokenizer tokenizer(run.resolve(run.tokenizer.path));
        const auto identity = PeerIdentity::loadOrCreate(o.dataDir / "identity.key");
        TrainerConfig config;
        config.allowCuda = false;
        const auto swarmPeer = startTrainer(run, tokenizer, identity, config, runDataDir(o.dataDir, run.runId), true, "t");
        QCOMPARE(swarmPeer->step(), 0L);
    }

    void tamperedCorpusIsRefusedBeforeTraining()
    {
        QTemporaryDir tmp;
        const std::filesystem::path dir = tmp.path().toStdString();
        auto run = test::tinyRun(dir);
        writeFileAtomically(dir / "manifest.json", toJson(run));
        std::string corpus = readWholeFile(run.corpus.files[0].path);
        corpus[100] ^= 1;
        writeFileAtomically(run.corpus.files[0].path, corpus);

        SessionOptions o;
        o.manifest = dir / "manifest.json";
        o.dataDir = dir / "data";
        o.allowCuda = false;
        o.maxSteps = 1;
        std::atomic<bool> stop{false};
        QCOMPARE(runTrainingSession(o, stop), 2);
        QVERIFY(!std::filesystem::exists(dir / "data" / "runs"));
    }

    void missingManifestIsAClearError()
    {
        SessionOptions o;
        o.manifest = "/nonexistent/manifest.json";
        o.dataDir = QDir::tempPath().toStdString();
        std::atomic<bool> stop{false};
        QCOMPARE(runTrainingSession(o, stop), 2);
    }
};

QTEST_APPLESS_MAIN(TestTrainingSession)
#include "tst_trainingsession.moc"
