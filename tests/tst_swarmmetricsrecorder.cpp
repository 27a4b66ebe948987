// The monitor's metrics recorder (monitor/SwarmMetricsRecorder.h) fed with verified records as the DHT
// returns them: one JSON line and one CSV row per new (peer, step), repeats and older copies
// skipped, non-metrics payloads skipped, the signer's id kept over the payload's claim, and
// the counters and latest-per-peer view that the status reads.
#include "monitor/SwarmMetricsRecorder.h"

#include "TestSupport.h"

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

#include <fstream>

namespace fs = std::filesystem;
using namespace dedloc;

using dedloc::test::readLines;

namespace {

SignedRecord metrics(const std::string &peer, long step, double loss)
{
    SignedRecord r;
    r.peerId = peer;
    r.payload = nlohmann::json{{"step", step}, {"loss", loss}, {"name", "n-" + peer}, {"peer_id", "forged"},
                               {"samples", 10 * step}}.dump();
    return r;
}


} // namespace

class TestSwarmMetricsRecorder : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void recordsEachNewStepOnceInBothFiles()
    {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        SwarmMetricsRecorder recorder(root / "m" / "swarm.jsonl", root / "m" / "swarm.csv");
        QCOMPARE(recorder.record({metrics("aa", 1, 9.0), metrics("bb", 1, 8.0)}), 2);
        // The same records again (the DHT keeps them for a while), an older copy, a non-metrics one.
        SignedRecord junk;
        junk.peerId = "cc";
        junk.payload = "not json";
        QCOMPARE(recorder.record({metrics("aa", 1, 9.0), metrics("bb", 1, 8.0), junk}), 0);
        QCOMPARE(recorder.record({metrics("aa", 2, 7.0), metrics("bb", 1, 8.0)}), 1);
        QCOMPARE(recorder.record({metrics("aa", 1, 9.0)}), 0); // older than what was written

        const auto json = readLines(root / "m" / "swarm.jsonl");
        QCOMPARE(json.size(), std::size_t(3));
        const auto last = nlohmann::json::parse(json[2]);
        QCOMPARE(last.at("peer_id").get<std::string>(), std::string("aa")); // the signer, not "forged"
        QCOMPARE(last.at("step").get<long>(), 2L);
        QVERIFY(last.at("recorded_at").get<double>() > 1.6e9);

        const auto csv = readLines(root / "m" / "swarm.csv");
        QCOMPARE(csv.size(), std::size_t(4)); // header + 3 rows
        QCOMPARE(csv[0], metricsCsvHeader());
        QVERIFY(csv[3].find(",aa,n-aa,") != std::string::npos);

        const auto s = recorder.stats();
        QCOMPARE(s.rows, 3LL);
        QCOMPARE(s.csvRows, 3LL);
        QCOMPARE(s.peers, std::size_t(2));
        QVERIFY(s.lastError.empty());
        const auto latest = recorder.latestByPeer();
        QCOMPARE(latest.at("aa").at("loss").get<double>(), 7.0);
        QCOMPARE(latest.at("bb").at("step").get<long>(), 1L);

        // Each recorded (peer, step) is credited once, under the signer's id.
        auto credit = recorder.takeChangedCredit(8);
        QCOMPARE(credit.size(), std::size_t(2));
        std::sort(credit.begin(), credit.end());
        const auto aa = creditFromJson(credit[0].second, "aa", "mon", 0.0);
        QVERIFY(aa.has_value());
        QCOMPARE(aa->samples, 10LL + 20LL);
        QCOMPARE(aa->steps, 2L);
        QCOMPARE(aa->ranges, (std::vector<std::pair<long, long>>{{1, 2}}));
        QVERIFY(recorder.takeChangedCredit(8).empty()); // nothing new

        // A peer that stepped faster than it publishes lists the steps in between: each is
        // credited once (steps 3 and 4 here), a listed step already credited (2) is not again.
        SignedRecord fast;
        fast.peerId = "aa";
        fast.payload = nlohmann::json{{"step", 5}, {"samples", 50}, {"steps", {{2, 20}, {4, 40}, {3, 30}, {5, 50}}}}.dump();
        QCOMPARE(recorder.record({fast}), 1);
        const auto more = recorder.takeChangedCredit(8);
        QCOMPARE(more.size(), std::size_t(1));
        const auto aa5 = creditFromJson(more[0].second, "aa", "mon", 0.0);
        QVERIFY(aa5.has_value());
        QCOMPARE(aa5->samples, 10LL + 20 + 30 + 40 + 50);
        QCOMPARE(aa5->ranges, (std::vector<std::pair<long, long>>{{1, 5}}));
    }

    // A payload above the bound is skipped (its peer may still record smaller ones), and once
    // MaxRecordedPeers peers are recorded a new one is skipped while the known ones go on.
    void recordsAreBoundedInSizeAndPeers()
    {
        QTemporaryDir tmp;
        SwarmMetricsRecorder recorder(fs::path(tmp.path().toStdString()) / "swarm.jsonl");
        auto big = metrics("aa", 1, 9.0);
        big.payload.insert(big.payload.size() - 1, ",\"pad\":\"" + std::string(MaxMetricsRecordBytes, 'x') + "\"");
        QVERIFY(nlohmann::json::parse(big.payload).is_object());
        QCOMPARE(recorder.record({big}), 0);
        QCOMPARE(recorder.record({metrics("aa", 1, 9.0)}), 1);
        std::vector<SignedRecord> crowd;
        for (std::size_t i = 1; i < MaxRecordedPeers; ++i)
            crowd.push_back(metrics("peer-" + std::to_string(i), 1, 1.0));
        QCOMPARE(recorder.record(crowd), int(MaxRecordedPeers) - 1);
        QCOMPARE(recorder.record({metrics("one-too-many", 1, 1.0)}), 0);
        QCOMPARE(recorder.record({metrics("aa", 2, 8.0)}), 1);
        QCOMPARE(recorder.stats().peers, MaxRecordedPeers);
    }

    void aFullDiskIsReportedAndRetriedWithoutDuplicates()
    {
        if (!fs::exists("/dev/full"))
            QSKIP("no /dev/full");
        QTemporaryDir tmp;
        const fs::path csv = fs::path(tmp.path().toStdString()) / "swarm.csv";
        // JSON lines on a full disk (/dev/full fails every write with ENOSPC), CSV on a good one.
        SwarmMetricsRecorder recorder("/dev/full", csv);
        QCOMPARE(recorder.record({metrics("aa", 1, 9.0)}), 0);
        auto s = recorder.stats();
        QCOMPARE(s.rows, 0LL);
        QCOMPARE(s.csvRows, 1LL); // the other file goes on
        QVERIFY2(s.lastError.find("No space left") != std::string::npos, s.lastError.c_str());
        QVERIFY(s.lastError.find("/dev/full") != std::string::npos);
        // The DHT still holds the record: the JSON line is tried again, the CSV row is not repeated.
        QCOMPARE(recorder.record({metrics("aa", 1, 9.0)}), 0);
        QCOMPARE(recorder.stats().csvRows, 1LL);
        QCOMPARE(readLines(csv).size(), std::size_t(2)); // header + one row
        QVERIFY(recorder.latestByPeer().empty());    // nothing counts as recorded until the JSON line is
    }

    void evaluationsGoToTheJsonLinesAndTheirOwnCsv()
    {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        SwarmMetricsRecorder recorder(root / "swarm.jsonl", root / "swarm.csv", root / "evaluation.csv");
        QVERIFY(recorder.latestEvaluation().is_null());
        QCOMPARE(recorder.record({metrics("aa", 1, 9.0)}), 1);
        QVERIFY(recorder.recordEvaluation({{"step", 40}, {"task", "sib,bn"}, {"accuracy", 0.5}, {"macro_f1", 0.25},
                                           {"control_accuracy", 0.375}, {"confusion", {{1, 2}, {3, 4}}}}));

        const auto json = readLines(root / "swarm.jsonl");
        QCOMPARE(json.size(), std::size_t(2));
        const auto e = nlohmann::json::parse(json[1]);
        QCOMPARE(e.at("event").get<std::string>(), std::string("evaluation"));
        QCOMPARE(e.at("macro_f1").get<double>(), 0.25);
        QVERIFY(e.at("recorded_at").get<double>() > 1.6e9);
        QCOMPARE(recorder.latestEvaluation().at("step").get<long>(), 40L);

        const auto csv = readLines(root / "evaluation.csv");
        QCOMPARE(csv.size(), std::size_t(2));
        QCOMPARE(csv[0], std::string("recorded_at,step,task,train_examples,test_examples,accuracy,macro_f1,"
                                     "dev_accuracy,control_accuracy,control_macro_f1,seconds"));
        // recorded_at, step 40, the quoted task, no counts, the scores, no dev, control F1 or seconds.
        const auto row = csv[1].substr(csv[1].find(','));
        QCOMPARE(row, std::string(",40,\"sib,bn\",,,0.5,0.25,,0.375,,"));
        // Step rows stay in swarm.csv only, evaluations never.
        QCOMPARE(readLines(root / "swarm.csv").size(), std::size_t(2));
        QCOMPARE(recorder.stats().rows, 1LL);
    }

    void unopenableFilesAreErrors()
    {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        std::ofstream(root / "plain") << "x";
        QVERIFY(test::errorOf([&] {
                    SwarmMetricsRecorder r(root / "plain" / "swarm.jsonl");
                }).contains(QStringLiteral("cannot create")));
        QVERIFY(test::errorOf([&] {
                    SwarmMetricsRecorder r(root / "ok.jsonl", root / "plain" / "swarm.csv");
                }).contains(QStringLiteral("cannot create")));
    }
};

QTEST_APPLESS_MAIN(TestSwarmMetricsRecorder)
#include "tst_swarmmetricsrecorder.moc"
