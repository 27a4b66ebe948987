// The status documents of `dedloc-lead serve` (monitor/ServeStatus.h): every field of
// /status and /peers computed from a known snapshot, recorder counters and checkpoint list,
// and unknown values reported as null rather than invented.
#include "monitor/ServeStatus.h"

#include <QtTest>

using namespace dedloc;

namespace {

ServeStatusInput knownInput()
{
    ServeStatusInput in;
    auto &s = in.snapshot;
    s.state = PeerState::Training;
    s.stateDetail = "monitor: recording metrics, keeping the latest state";
    s.role = PeerRole::Monitor;
    s.peerId = "mmmm";
    s.runId = "tiny-run";
    s.runName = "Tiny";
    s.localEpoch = 10;
    s.globalEpoch = 12;
    s.targetBatchSize = 128;
    s.swarmSamplesAccumulated = 96.0;
    s.swarmSamplesPerSecond = 48.0;
    s.etaSeconds = 0.75;
    s.trainers = 2;
    s.monitors = 1;
    s.clientModePeers = 1;
    s.peers = {
        {"tttt2", PeerRole::Trainer, true, true, 11, 0, 0.0, 0.4},
        {"mmmm", PeerRole::Monitor, false, false, 10, 0, 0.0, 0.0},
        {"tttt1", PeerRole::Trainer, false, false, 12, 96, 48.0, 0.2},
    };
    in.now = 1000.5;
    in.startedAt = 900.0;
    in.version = "0.1.0";
    in.name = "lead-monitor";
    in.dhtEndpoint = "203.0.113.7:31340";
    in.metricsJsonLines = "/srv/m/swarm.jsonl";
    in.metricsCsv = "/srv/m/swarm.csv";
    in.metrics.rows = 23;
    in.metrics.csvRows = 22;
    in.metrics.peers = 2;
    in.metrics.lastRecordedAt = 999.0;
    in.metrics.lastError = "cannot append to /srv/m/swarm.csv: No space left on device";
    in.latestMetrics["tttt1"] = {{"step", 12}, {"loss", 7.5}, {"name", "alice"}, {"time", 998.0}};
    in.checkpoints = {{5, "/srv/kept/epoch-00000005.ddlc", 1000, 500.0},
                      {10, "/srv/kept/epoch-00000010.ddlc", 1024, 800.0}};
    in.keepCheckpoints = 3;
    return in;
}

} // namespace

class TestServeStatus : public QObject {
    Q_OBJECT
  private Q_SLOTS:
    void statusCarriesTheSnapshot()
    {
        const auto j = serveStatusJson(knownInput());
        QCOMPARE(j.at("schema").get<std::string>(), std::string("dedloc-status/1"));
        QCOMPARE(j.at("time").get<double>(), 1000.5);
        QCOMPARE(j.at("run").at("id").get<std::string>(), std::string("tiny-run"));
        QCOMPARE(j.at("run").at("name").get<std::string>(), std::string("Tiny"));
        QCOMPARE(j.at("run").at("target_batch_size").get<long>(), 128L);

        const auto &m = j.at("monitor");
        QCOMPARE(m.at("peer_id").get<std::string>(), std::string("mmmm"));
        QCOMPARE(m.at("name").get<std::string>(), std::string("lead-monitor"));
        QCOMPARE(m.at("state").get<std::string>(), std::string(peerStateName(PeerState::Training)));
        QCOMPARE(m.at("dht").get<std::string>(), std::string("203.0.113.7:31340"));
        QCOMPARE(m.at("version").get<std::string>(), std::string("0.1.0"));
        QCOMPARE(m.at("started_at").get<double>(), 900.0);
        QCOMPARE(m.at("uptime_s").get<double>(), 100.5);

        const auto &w = j.at("swarm");
        QCOMPARE(w.at("global_epoch").get<long>(), 12L);
        QCOMPARE(w.at("samples_accumulated").get<double>(), 96.0);
        QCOMPARE(w.at("progress").get<double>(), 0.75); // 96 of 128
        QCOMPARE(w.at("samples_per_s").get<double>(), 48.0);
        QCOMPARE(w.at("eta_s").get<double>(), 0.75);
        const auto &p = w.at("peers");
        QCOMPARE(p.at("total").get<int>(), 3);
        QCOMPARE(p.at("trainers").get<int>(), 2);
        QCOMPARE(p.at("auxiliaries").get<int>(), 0);
        QCOMPARE(p.at("monitors").get<int>(), 1);
        QCOMPARE(p.at("client_mode").get<int>(), 1);
        QCOMPARE(p.at("paused").get<int>(), 1);

        const auto &st = j.at("state");
        QCOMPARE(st.at("epoch").get<long>(), 10L);
        QCOMPARE(st.at("keep").get<int>(), 3);
        QCOMPARE(st.at("checkpoints").size(), std::size_t(2));
        QCOMPARE(st.at("checkpoints")[0].at("epoch").get<long>(), 5L);
        QCOMPARE(st.at("latest_checkpoint").at("epoch").get<long>(), 10L);
        QCOMPARE(st.at("latest_checkpoint").at("file").get<std::string>(), std::string("epoch-00000010.ddlc"));
        QCOMPARE(st.at("latest_checkpoint").at("bytes").get<long>(), 1024L);
        QCOMPARE(st.at("latest_checkpoint").at("time").get<double>(), 800.0);

        const auto &mx = j.at("metrics");
        QCOMPARE(mx.at("jsonl").get<std::string>(), std::string("/srv/m/swarm.jsonl"));
        QCOMPARE(mx.at("csv").get<std::string>(), std::string("/srv/m/swarm.csv"));
        QCOMPARE(mx.at("rows").get<long>(), 23L);
        QCOMPARE(mx.at("csv_rows").get<long>(), 22L);
        QCOMPARE(mx.at("peers_recorded").get<int>(), 2);
        QCOMPARE(mx.at("last_recorded_at").get<double>(), 999.0);
        QVERIFY(mx.at("last_error").get<std::string>().find("No space left") != std::string::npos);
    }

    void statusCarriesTheLatestEvaluation()
    {
        auto in = knownInput();
        in.evaluateEveryNSteps = 50;
        in.evaluationCsv = "/srv/m/evaluation.csv";
        in.latestEvaluation = {{"event", "evaluation"}, {"step", 100}, {"accuracy", 0.625}, {"control_accuracy", 0.5}};
        const auto e = serveStatusJson(in).at("evaluation");
        QCOMPARE(e.at("every_n_steps").get<long>(), 50L);
        QCOMPARE(e.at("csv").get<std::string>(), std::string("/srv/m/evaluation.csv"));
        QCOMPARE(e.at("latest").at("step").get<long>(), 100L);
        QCOMPARE(e.at("latest").at("accuracy").get<double>(), 0.625);
    }

    void unknownValuesAreNull()
    {
        ServeStatusInput in; // nothing known yet: the monitor is still connecting
        in.snapshot.etaSeconds = -1.0;
        const auto j = serveStatusJson(in);
        QVERIFY(j.at("swarm").at("eta_s").is_null());
        QVERIFY(j.at("swarm").at("progress").is_null()); // no target batch size yet
        QVERIFY(j.at("run").at("id").is_null());
        QVERIFY(j.at("run").at("target_batch_size").is_null());
        QVERIFY(j.at("monitor").at("dht").is_null());
        QVERIFY(j.at("state").at("latest_checkpoint").is_null());
        QVERIFY(j.at("state").at("checkpoints").is_array());
        QVERIFY(j.at("metrics").at("last_error").is_null());
        QVERIFY(j.at("metrics").at("last_recorded_at").is_null());
        QVERIFY(j.at("evaluation").at("every_n_steps").is_null()); // the monitor evaluates nothing
        QVERIFY(j.at("evaluation").at("csv").is_null());
        QVERIFY(j.at("evaluation").at("latest").is_null());
        QCOMPARE(j.at("swarm").at("peers").at("total").get<int>(), 0);
    }

    void peersListsEveryLivePeerSortedWithItsMetrics()
    {
        const auto j = servePeersJson(knownInput());
        QCOMPARE(j.at("schema").get<std::string>(), std::string("dedloc-peers/1"));
        QCOMPARE(j.at("global_epoch").get<long>(), 12L);
        const auto &p = j.at("peers");
        QCOMPARE(p.size(), std::size_t(3));
        // trainers first (by peer id), then the monitor
        QCOMPARE(p[0].at("peer_id").get<std::string>(), std::string("tttt1"));
        QCOMPARE(p[1].at("peer_id").get<std::string>(), std::string("tttt2"));
        QCOMPARE(p[2].at("peer_id").get<std::string>(), std::string("mmmm"));

        QCOMPARE(p[0].at("name").get<std::string>(), std::string("alice"));
        QCOMPARE(p[0].at("role").get<std::string>(), std::string("trainer"));
        QCOMPARE(p[0].at("epoch").get<long>(), 12L);
        QCOMPARE(p[0].at("samples_accumulated").get<long>(), 96L);
        QCOMPARE(p[0].at("samples_per_s").get<double>(), 48.0);
        QCOMPARE(p[0].at("seconds_since_report").get<double>(), 0.2);
        QCOMPARE(p[0].at("last_step").get<long>(), 12L);
        QCOMPARE(p[0].at("loss").get<double>(), 7.5);
        QCOMPARE(p[0].at("last_step_at").get<double>(), 998.0);
        QCOMPARE(p[0].at("client_mode").get<bool>(), false);

        QCOMPARE(p[1].at("client_mode").get<bool>(), true);
        QCOMPARE(p[1].at("paused").get<bool>(), true);
        QVERIFY(p[1].at("name").is_null()); // no metrics recorded for it yet
        QVERIFY(p[1].at("loss").is_null());

        QCOMPARE(p[2].at("role").get<std::string>(), std::string("monitor"));
        QCOMPARE(p[2].at("name").get<std::string>(), std::string("lead-monitor"));
    }
};

QTEST_APPLESS_MAIN(TestServeStatus)
#include "tst_servestatus.moc"
