// The control protocol of `dedloc ctl` (core/face/ControlProtocol.h): requests round-trip,
// hostile or malformed lines are refused with a reason, durations parse as people write them,
// and the status answer carries the snapshot's numbers under stable keys.
#include "face/ControlProtocol.h"

#include <QtTest>

using namespace dedloc;

class TestControlProtocol final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void requestsRoundTrip()
    {
        for (const ControlRequest r : {ControlRequest{ControlCommand::Status, 0.0}, ControlRequest{ControlCommand::Pause, 0.0},
                                       ControlRequest{ControlCommand::Pause, 5400.0}, ControlRequest{ControlCommand::Resume, 0.0},
                                       ControlRequest{ControlCommand::Quit, 0.0}, ControlRequest{ControlCommand::Raise, 0.0}}) {
            const auto line = controlRequestLine(r);
            QVERIFY2(line.find('\n') == std::string::npos, line.c_str());
            const auto parsed = parseControlRequest(line);
            QVERIFY2(parsed.request.has_value(), parsed.error.c_str());
            QCOMPARE(int(parsed.request->command), int(r.command));
            QCOMPARE(parsed.request->pauseSeconds, r.pauseSeconds);
        }
        QCOMPARE(controlRequestLine({ControlCommand::Pause, 60.0}), std::string(R"({"command":"pause","seconds":60.0})"));
    }

    void badRequestsAreRefusedWithAReason_data()
    {
        QTest::addColumn<QByteArray>("line");
        QTest::addColumn<QString>("says");
        QTest::newRow("not JSON") << QByteArray("pause please") << "one JSON object";
        QTest::newRow("an array") << QByteArray(R"(["status"])") << "one JSON object";
        QTest::newRow("no command") << QByteArray(R"({"seconds": 5})") << "names no \"command\"";
        QTest::newRow("command not a string") << QByteArray(R"({"command": 3})") << "names no \"command\"";
        QTest::newRow("unknown command") << QByteArray(R"({"command": "format-disk"})") << "unknown command \"format-disk\"";
        QTest::newRow("seconds on resume") << QByteArray(R"({"command": "resume", "seconds": 5})") << "unexpected key \"seconds\"";
        QTest::newRow("unknown key") << QByteArray(R"({"command": "status", "verbose": true})") << "unexpected key \"verbose\"";
        QTest::newRow("seconds a string") << QByteArray(R"({"command": "pause", "seconds": "5"})") << "must be a number";
        QTest::newRow("seconds zero") << QByteArray(R"({"command": "pause", "seconds": 0})") << "must be in (0,";
        QTest::newRow("seconds negative") << QByteArray(R"({"command": "pause", "seconds": -1})") << "must be in (0,";
        QTest::newRow("seconds beyond a year") << QByteArray(R"({"command": "pause", "seconds": 1e12})") << "must be in (0,";
        QTest::newRow("too long") << QByteArray(R"({"command": "status", "x": ")") + QByteArray(70000, 'a') + QByteArray(R"("})")
                                  << "longer than 65536 bytes";
    }

    void badRequestsAreRefusedWithAReason()
    {
        QFETCH(QByteArray, line);
        QFETCH(QString, says);
        const auto parsed = parseControlRequest(line.toStdString());
        QVERIFY(!parsed.request.has_value());
        QVERIFY2(QString::fromStdString(parsed.error).contains(says), parsed.error.c_str());
    }

    void durations()
    {
        QCOMPARE(parseControlDuration("90"), std::optional<double>(90.0));
        QCOMPARE(parseControlDuration("90s"), std::optional<double>(90.0));
        QCOMPARE(parseControlDuration("15m"), std::optional<double>(900.0));
        QCOMPARE(parseControlDuration("2h"), std::optional<double>(7200.0));
        QCOMPARE(parseControlDuration("1h30m"), std::optional<double>(5400.0));
        QCOMPARE(parseControlDuration("1d2h3m4s"), std::optional<double>(86400.0 + 7200.0 + 180.0 + 4.0));
        for (const char *bad : {"", "0", "0s", "h", "1x", "1m1h", "1h1h", "1h30", "-5m", "1.5h", "366d1s", "9999999999s", " 5m"})
            QVERIFY2(!parseControlDuration(bad).has_value(), bad);
    }

    void statusCarriesTheSnapshot()
    {
        PeerSnapshot s;
        s.state = PeerState::Paused;
        s.stateDetail = "paused by you";
        s.runId = "bn-albert-demo";
        s.globalEpoch = 41;
        s.targetBatchSize = 128;
        s.swarmSamplesAccumulated = 77.9;
        s.swarmSamplesPerSecond = 51.25;
        s.trainers = 2;
        s.monitors = 1;
        s.session.samples = 1234;
        s.allTime.samples = 98765;
        s.lastLoss = 8.25;
        const auto j = controlStatus(s, {true, "timed", "paused for 1 h", 1.8e9}, true);
        QCOMPARE(j.at("state").get<std::string>(), std::string("Paused"));
        QCOMPARE(j.at("detail").get<std::string>(), std::string("paused by you"));
        QCOMPARE(j.at("window").get<bool>(), true);
        QCOMPARE(j.at("step").get<long>(), 41L);
        QCOMPARE(j.at("batch").at("samples").get<long>(), 77L);
        QCOMPARE(j.at("batch").at("target").get<long>(), 128L);
        QCOMPARE(j.at("swarm").at("trainers").get<int>(), 2);
        QCOMPARE(j.at("swarm").at("samples_per_second").get<double>(), 51.25);
        QCOMPARE(j.at("you").at("samples").get<long long>(), 1234LL);
        QCOMPARE(j.at("you").at("samples_all_time").get<long long>(), 98765LL);
        QCOMPARE(j.at("loss").get<double>(), 8.25);
        QCOMPARE(j.at("pause").at("cause").get<std::string>(), std::string("timed"));
        QCOMPARE(j.at("pause").at("resumes_at").get<double>(), 1.8e9);
        QVERIFY(j.at("status_line").get<std::string>().rfind("Paused (paused by you) | step 41", 0) == 0);

        s.lastLoss = -1.0; // no loss yet: null, not a made-up number
        const auto k = controlStatus(s, {}, false);
        QVERIFY(k.at("loss").is_null());
        QCOMPARE(k.at("pause").at("paused").get<bool>(), false);
        QVERIFY(!k.at("pause").contains("reason"));
    }
};

QTEST_GUILESS_MAIN(TestControlProtocol)
#include "tst_controlprotocol.moc"
