// `dedloc-lead serve` end to end: the lead's bootstrap node and monitor as a real process,
// with two `dedloc` trainers of the tiny run bootstrapping from it on loopback. Judged by what
// a lead sees: the CSV and JSON lines hold rows of both trainers whose values match what the
// trainers wrote themselves, GET /status reports 2 trainers and the swarm's global epoch, /peers
// names them, a checkpoint of the swarm's state is kept, and bad input fails at once.
#include "HttpProbe.h"
#include "SwarmHarness.h"
#include "TestSupport.h"
#include "monitor/MetricsCsv.h"

#include <QTemporaryDir>
#include <QTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>

using namespace dedloc;
using namespace dedloc::test;
namespace fs = std::filesystem;

namespace {

nlohmann::json getJson(quint16 port, const std::string &path)
{
    const auto r = httpGet(port, path, 5.0);
    if (r.status != 200)
        return nullptr;
    return nlohmann::json::parse(r.body, nullptr, false);
}

// Rows of a CSV file as column -> cell maps (the test's own reader; no quoted cells expected).
std::vector<std::map<std::string, std::string>> readCsv(const fs::path &file)
{
    std::ifstream in(file);
    std::string line;
    std::vector<std::string> header;
    std::vector<std::map<std::string, std::string>> rows;
    auto split = [](const std::string &l) {
        std::vector<std::string> cells(1);
        for (const char c : l)
            if (c == ',')
                cells.emplace_back();
            else
                cells.back().push_back(c);
        return cells;
    };
    if (std::getline(in, line))
        header = split(line);
    while (std::getline(in, line)) {
        const auto cells = split(line);
        std::map<std::string, std::string> row;
        for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i)
            row[header[i]] = cells[i];
        rows.push_back(row);
    }
    return rows;
}

std::vector<nlohmann::json> readJsonLines(const fs::path &file)
{
    std::ifstream in(file);
    std::vector<nlohmann::json> out;
    for (std::string line; std::getline(in, line);)
        out.push_back(nlohmann::json::parse(line, nullptr, false));
    return out;
}

// A TCP port held open by this process (to make `serve` find it taken).
struct HeldTcpPort {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    quint16 port = 0;
    HeldTcpPort()
    {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
        ::listen(fd, 1);
        socklen_t len = sizeof a;
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
        port = ntohs(a.sin_port);
    }
    ~HeldTcpPort() { ::close(fd); }
};

} // namespace

class TestLeadServe : public QObject {
    Q_OBJECT

  private:
    QTemporaryDir m_tmp;
    fs::path m_app = DEDLOC_APP;
    fs::path m_lead = DEDLOC_LEAD;

    fs::path dir(const char *name)
    {
        auto d = fs::path(m_tmp.path().toStdString()) / name;
        fs::create_directories(d);
        return d;
    }

  private Q_SLOTS:
    void initTestCase() { m_tmp.setAutoRemove(qEnvironmentVariableIsEmpty("DEDLOC_KEEP_TEST_DIR")); }

    void serveBootstrapsRecordsAndReports()
    {
        const auto d = dir("swarm");
        // Sparse rounds (topk4bit): the monitor's replay then reads variable-length updates.
        const auto manifest = writeSignedTinyRun(d, 32, 1000, Compression::TopK4Bit);
        SwarmHarness h(m_app, manifest, d / "peers");
        auto &serve = h.startLeadServe(m_lead, {QStringLiteral("--state-every"), QStringLiteral("2"),
                                                QStringLiteral("--keep-checkpoints"), QStringLiteral("2")});
        quint16 port = 0;
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return (port = SwarmHarness::serveStatusPort(serve)) != 0; }, 60),
                     {&serve});

        const long steps = 16; // long enough for a second state refresh (2 s after the first)
        const QStringList args{QStringLiteral("--steps"),
                               QString::number(steps),
                               QStringLiteral("--min-peers"),
                               QStringLiteral("2"),
                               QStringLiteral("--average-state-every"),
                               QStringLiteral("0")};
        auto &t1 = h.startPeer(QStringLiteral("trainer-1"), args);
        auto &t2 = h.startPeer(QStringLiteral("trainer-2"), args);

        // While both train: /status counts 2 trainers and the monitor, and its global epoch is
        // the epoch both trainers stand at (read before and after the request, unchanged), or
        // one behind it (the DHT spreads their progress records a period late).
        nlohmann::json during;
        long stableEpoch = -1;
        SWARM_VERIFY(SwarmHarness::waitFor(
                         [&] {
                             const long before1 = t1.lastStep(), before2 = t2.lastStep();
                             during = getJson(port, "/status");
                             if (!during.is_object() || before1 < 2 || before1 != before2 || t1.lastStep() != before1 ||
                                 t2.lastStep() != before2)
                                 return false;
                             stableEpoch = before1;
                             return during["swarm"]["peers"]["trainers"] == 2 &&
                                    during["swarm"]["global_epoch"].get<long>() <= stableEpoch
                                    && during["swarm"]["global_epoch"].get<long>() >= stableEpoch - 1;
                         },
                         180),
                     {&serve, &t1, &t2});
        QCOMPARE(during["swarm"]["peers"]["monitors"].get<int>(), 1);
        QCOMPARE(during["swarm"]["peers"]["total"].get<int>(), 3);
        QCOMPARE(during["schema"].get<std::string>(), std::string("dedloc-status/1"));
        QCOMPARE(during["run"]["target_batch_size"].get<long>(), 32L);
        QCOMPARE(during["monitor"]["dht"].get<std::string>(), "127.0.0.1:" + std::to_string(h.dhtPort()));

        // /peers names both trainers (from their metrics) once each has a recorded step.
        SWARM_VERIFY(SwarmHarness::waitFor(
                         [&] {
                             const auto peers = getJson(port, "/peers");
                             std::set<std::string> names;
                             if (peers.is_object())
                                 for (const auto &p : peers["peers"])
                                     if (p.value("role", std::string()) == "trainer" && p.contains("name")
                                         && p.at("name").is_string())
                                         names.insert(p.at("name").get<std::string>());
                             return names == std::set<std::string>{"trainer-1", "trainer-2"};
                         },
                         60),
                     {&serve, &t1, &t2});

        SWARM_VERIFY(SwarmHarness::waitFor([&] { return !t1.running() && !t2.running(); }, 240), {&serve, &t1, &t2});
        QCOMPARE(t1.lastStep(), steps);
        QCOMPARE(t2.lastStep(), steps);
        // The global epoch never goes back while the trainers' last records live.
        const auto after = getJson(port, "/status");
        QVERIFY(after.is_object());
        QVERIFY(after["swarm"]["global_epoch"].get<long>() >= stableEpoch);
        QVERIFY(after["swarm"]["global_epoch"].get<long>() <= steps);

        // Metrics of both trainers in both files, each row's values as the trainer wrote them.
        std::map<std::string, std::map<long, nlohmann::json>> own; // peer id -> step -> event
        for (auto *t : {&t1, &t2})
            for (const auto &e : t->events())
                own[e.at("peer_id").get<std::string>()][e.at("step").get<long>()] = e;
        QCOMPARE(own.size(), std::size_t(2));
        const auto metricsDir = d / "peers" / "serve" / "metrics";
        SWARM_VERIFY(SwarmHarness::waitFor(
                         [&] {
                             std::set<std::string> ids;
                             for (const auto &row : readCsv(metricsDir / "swarm.csv"))
                                 ids.insert(row.at("peer_id"));
                             return ids.size() == 2;
                         },
                         15),
                     {&serve});
        std::ifstream csvFile(metricsDir / "swarm.csv");
        std::string header;
        std::getline(csvFile, header);
        QCOMPARE(header, metricsCsvHeader());
        const auto csv = readCsv(metricsDir / "swarm.csv");
        const auto jsonl = readJsonLines(metricsDir / "swarm.jsonl");
        QCOMPARE(csv.size(), jsonl.size()); // the same rows in both files
        std::map<std::string, int> rowsPerPeer;
        for (std::size_t i = 0; i < csv.size(); ++i) {
            const auto &row = csv[i];
            const auto &line = jsonl[i];
            const auto peer = row.at("peer_id");
            QVERIFY2(own.count(peer), peer.c_str());
            const long step = std::stol(row.at("step"));
            QVERIFY2(own[peer].count(step), "a CSV row for a step the trainer never wrote");
            // (.at(), not operator[]: on a const json a missing key is undefined behaviour.)
            const auto &mine = own[peer][step];
            QCOMPARE(line.at("peer_id").get<std::string>(), peer);
            QCOMPARE(line.at("step").get<long>(), step);
            QCOMPARE(row.at("samples"), std::to_string(mine.at("samples").get<long>()));
            QCOMPARE(row.at("group_size"), std::to_string(mine.at("group_size").get<long>()));
            QCOMPARE(row.at("params_sha"), mine.at("params_sha").get<std::string>());
            // A step to which this trainer contributed no samples (the other filled the batch)
            // has no loss: an empty cell.
            if (mine.contains("loss"))
                QCOMPARE(std::stod(row.at("loss")), mine.at("loss").get<double>());
            else
                QCOMPARE(row.at("loss"), std::string());
            QCOMPARE(row.at("role"), std::string("trainer"));
            QVERIFY(row.at("name") == "trainer-1" || row.at("name") == "trainer-2");
            ++rowsPerPeer[peer];
        }
        QCOMPARE(rowsPerPeer.size(), std::size_t(2));

        // A checkpoint of the swarm's state is kept (state refreshed every 2 epochs, 2 kept),
        // and /status names the newest.
        const auto runId = nlohmann::json::parse(std::ifstream(manifest))["run_id"].get<std::string>();
        const auto kept = d / "peers" / "serve" / "kept" / runId;
        nlohmann::json status;
        std::vector<long> epochs;
        // The monitor may still be saving the last state or recording the last rows when the
        // trainers end: wait until the status (refreshed 4 times a second) names the newest kept
        // file and counts every row the metrics file holds.
        SWARM_VERIFY(SwarmHarness::waitFor(
                         [&] {
                             epochs.clear();
                             std::error_code ec;
                             for (const auto &e : fs::directory_iterator(kept, ec))
                                 epochs.push_back(std::stol(e.path().filename().string().substr(6, 8)));
                             std::sort(epochs.begin(), epochs.end());
                             status = getJson(port, "/status");
                             return status.is_object() && status["state"]["latest_checkpoint"].is_object()
                                    && !epochs.empty()
                                    && status["state"]["latest_checkpoint"]["epoch"].get<long>() == epochs.back()
                                    && status["metrics"]["rows"].get<long>()
                                           == static_cast<long>(readJsonLines(metricsDir / "swarm.jsonl").size());
                         },
                         30),
                     {&serve});
        QVERIFY(!epochs.empty() && epochs.size() <= 2);
        QVERIFY(epochs.back() >= 2 && epochs.back() <= steps);
        QCOMPARE(status["state"]["latest_checkpoint"]["epoch"].get<long>(), epochs.back());
        QVERIFY(status["state"]["latest_checkpoint"]["bytes"].get<long>() > 1000);
        // After its first download the monitor follows by replaying the trainers' (sparse) updates.
        SWARM_VERIFY(serve.logText().contains(QStringLiteral("replayed the averaged steps")), {&serve});
        QVERIFY(status["metrics"]["rows"].get<long>() >= static_cast<long>(jsonl.size()));
        QVERIFY(status["metrics"]["last_error"].is_null());

        // Everything else: 404; writes: 405.
        QCOMPARE(httpGet(port, "/admin").status, 404);
        QCOMPARE(httpExchange(port, "DELETE /status HTTP/1.1\r\nHost: x\r\n\r\n").status, 405);

        // SIGTERM (systemd's stop) ends it cleanly.
        serve.process->terminate();
        QVERIFY(serve.process->waitForFinished(30000));
        QCOMPARE(serve.process->exitStatus(), QProcess::NormalExit);
        QCOMPARE(serve.process->exitCode(), 0);
    }

    void badInputFailsAtOnceWithTheReason()
    {
        const auto d = dir("bad");
        const auto manifest = writeSignedTinyRun(d, 32);
        auto run = [&](const QStringList &extra, QString &output) {
            QProcess p;
            p.setProcessChannelMode(QProcess::MergedChannels);
            QStringList args{QStringLiteral("serve"),
                             QStringLiteral("--manifest"),
                             QString::fromStdString(manifest.string()),
                             QStringLiteral("--data-dir"),
                             QString::fromStdString((d / "data").string()),
                             QStringLiteral("--dht-port"),
                             QString::number(freeUdpPort()),
                             QStringLiteral("--status-interval"),
                             QStringLiteral("0"),
                             QStringLiteral("--duration"),
                             QStringLiteral("20")};
            p.start(QString::fromStdString(m_lead.string()), args << extra);
            if (!p.waitForFinished(15000)) { // 15 s < --duration: it must stop by itself, at once
                p.kill();
                p.waitForFinished();
                output = QString::fromUtf8(p.readAll());
                return -1;
            }
            output = QString::fromUtf8(p.readAll());
            return p.exitCode();
        };
        QString out;
        std::ofstream(d / "plain-file") << "x";
        QCOMPARE(run({QStringLiteral("--metrics-dir"), QString::fromStdString((d / "plain-file" / "m").string())}, out),
                 2);
        QVERIFY2(out.contains(QStringLiteral("cannot create the metrics directory")), qPrintable(out));

        HeldTcpPort held;
        QCOMPARE(run({QStringLiteral("--status-port"), QString::number(held.port)}, out), 2);
        QVERIFY2(out.contains(QStringLiteral("cannot listen for HTTP")), qPrintable(out));

        // The state donor's fixed port in use, and one out of range.
        QCOMPARE(run({QStringLiteral("--status-port"), QStringLiteral("0"), QStringLiteral("--service-port"),
                      QString::number(held.port)},
                     out),
                 2);
        QVERIFY2(out.contains(QStringLiteral("cannot listen on tcp://127.0.0.1:%1").arg(held.port)), qPrintable(out));
        QCOMPARE(run({QStringLiteral("--service-port"), QStringLiteral("70000")}, out), 2);
        QVERIFY2(out.contains(QStringLiteral("--service-port")), qPrintable(out));

        QCOMPARE(run({QStringLiteral("--dht-port"), QStringLiteral("0")}, out), 2);
        QVERIFY2(out.contains(QStringLiteral("--dht-port")), qPrintable(out));

        // The DHT port in use (another serve, or anything else holding the UDP port).
        const int udp = ::socket(AF_INET, SOCK_DGRAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ::bind(udp, reinterpret_cast<sockaddr *>(&a), sizeof a);
        socklen_t len = sizeof a;
        ::getsockname(udp, reinterpret_cast<sockaddr *>(&a), &len);
        QCOMPARE(run({QStringLiteral("--dht-port"), QString::number(ntohs(a.sin_port)), QStringLiteral("--status-port"),
                      QStringLiteral("0")},
                     out),
                 2);
        ::close(udp);
        QVERIFY2(out.contains(QStringLiteral("DHT")), qPrintable(out));

        // An unsigned manifest is not served.
        fs::remove(manifest.string() + ".minisig");
        QCOMPARE(run({QStringLiteral("--status-port"), QStringLiteral("0"), QStringLiteral("--data-dir"),
                      QString::fromStdString((d / "data2").string())},
                     out),
                 2);
        QVERIFY2(out.contains(QStringLiteral("minisig")) || out.contains(QStringLiteral("signature")), qPrintable(out));
    }
};

QTEST_GUILESS_MAIN(TestLeadServe)
#include "tst_leadserve.moc"
