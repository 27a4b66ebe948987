// PeerBridge (ui/PeerBridge.h) against a scripted PeerControl: snapshots are coalesced by
// sequence, commands are forwarded, the policy pauses and resumes the peer once per change and a
// manual pause wins over the automatic rules.
#include "PeerBridge.h"
#include "Settings.h"

#include <QSignalSpy>
#include <QtTest>

#include <vector>

using namespace dedloc;
using namespace dedloc::ui;

namespace {

class ScriptedPeer final : public PeerControl {
  public:
    PeerSnapshot next;
    mutable int snapshotCalls = 0;
    int starts = 0, resumes = 0, stops = 0;
    std::vector<std::string> pauses;
    ResourceCaps caps;
    void start() override { ++starts; }
    void pause(const std::string &reason) override { pauses.push_back(reason); }
    void resume() override { ++resumes; }
    void stop() override { ++stops; }
    void setCaps(const ResourceCaps &c) override { caps = c; }
    PeerSnapshot snapshot() const override
    {
        ++snapshotCalls;
        return next;
    }
};

struct Fixture {
    QTemporaryDir dir;
    std::unique_ptr<Settings> settings = Settings::forTesting(dir.filePath("s.ini"));
    ScriptedPeer peer;
    double now = 1000.0;
    std::vector<std::string> graphics;
    double gpuCelsius = 60.0, gpuWatts = 120.0, fan = 40.0;
    std::string fullScreen;
    std::unique_ptr<PeerBridge> bridge;
    Fixture()
    {
        PeerBridge::Options o;
        o.snapshotIntervalMs = 1000000; // the test ticks by hand
        o.probeEveryTicks = 1000000;
        o.clock = [this] { return LocalClockReading{now, 12 * 3600}; };
        o.gpuProbe = [this] {
            GpuSample s;
            s.vendor = GpuVendor::Nvidia;
            s.name = "Fake";
            for (const auto &g : graphics)
                s.graphicsProcesses.push_back({1, g, 0});
            s.temperatureCelsius = gpuCelsius;
            s.powerWatts = gpuWatts;
            s.fanPercent = fan;
            return s;
        };
        o.hostProbe = [this](HostObservation &h) { h.fullScreenProgram = fullScreen; };
        bridge = std::make_unique<PeerBridge>(peer, *settings, std::move(o));
    }
};

} // namespace

class TestPeerBridge final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void coalescesBySequence()
    {
        Fixture f;
        QSignalSpy spy(f.bridge.get(), &PeerBridge::snapshotChanged);
        f.peer.next.sequence = 1;
        f.peer.next.state = PeerState::Training;
        for (int i = 0; i < 5; ++i)
            f.bridge->tick();
        QCOMPARE(spy.count(), 1);
        QCOMPARE(f.peer.snapshotCalls, 5);
        f.peer.next.sequence = 7;
        f.peer.next.globalEpoch = 3;
        f.bridge->tick();
        f.bridge->tick();
        QCOMPARE(spy.count(), 2);
        QCOMPARE(spy.last().at(0).value<PeerSnapshot>().globalEpoch, 3L);
        QCOMPARE(f.bridge->snapshot().sequence, std::uint64_t(7));
    }

    void timerPollsAtFourHertz()
    {
        QTemporaryDir dir;
        auto settings = Settings::forTesting(dir.filePath("s.ini"));
        ScriptedPeer peer;
        PeerBridge::Options o; // default interval: 250 ms
        o.gpuProbe = [] { return GpuSample{}; };
        o.hostProbe = [](HostObservation &) {};
        PeerBridge bridge(peer, *settings, std::move(o));
        QSignalSpy spy(&bridge, &PeerBridge::snapshotChanged);
        QTRY_VERIFY_WITH_TIMEOUT(peer.snapshotCalls >= 3, 3000); // the timer polls by itself
        QCOMPARE(spy.count(), 1);                                // the first snapshot, then the same sequence: skipped
    }

    void joinStartsOnce()
    {
        Fixture f;
        QSignalSpy joined(f.bridge.get(), &PeerBridge::joinedChanged);
        f.bridge->join();
        f.bridge->join();
        QCOMPARE(f.peer.starts, 1);
        QCOMPARE(joined.count(), 1);
        QVERIFY(f.bridge->joined());
    }

    void noPauseBeforeJoin()
    {
        Fixture f;
        f.bridge->pauseManually();
        QVERIFY(f.peer.pauses.empty());
        QVERIFY(f.bridge->pauseDecision().paused);
        f.bridge->join(); // joins straight into the pause
        QCOMPARE(f.peer.pauses, std::vector<std::string>{"paused by you"});
    }

    void policyPausesAndResumesOncePerChange()
    {
        Fixture f;
        f.bridge->join();
        f.graphics = {"game.exe"};
        f.bridge->evaluatePolicy();
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.pauses, std::vector<std::string>{"game.exe is using the GPU for graphics"});
        f.graphics.clear();
        f.bridge->evaluatePolicy(); // quiet period starts: still paused, reason says so
        QCOMPARE(f.peer.resumes, 0);
        QVERIFY(QString::fromStdString(f.peer.pauses.back()).contains("resuming after 15 s of quiet"));
        f.now += 15.0;
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.resumes, 1);
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.resumes, 1);
    }

    // The GPU sample's temperature, power and fan reach the policy's limits; the full-screen
    // probe's program reaches its rule; the peer is told why.
    void heatAndFullScreenPauseThePeer()
    {
        Fixture f;
        auto rules = f.settings->pauseRules();
        rules.gpuTemperature = {85.0, 5.0};
        rules.fanSpeed = {90.0, 0.0};
        rules.limitGraceSeconds = 10.0;
        rules.quietPeriodSeconds = 0.0;
        f.settings->setPauseRules(rules);
        f.bridge->join();
        f.gpuCelsius = 88.0;
        f.bridge->evaluatePolicy();
        QVERIFY(f.peer.pauses.empty()); // within the grace period
        f.now += 10.0;
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.pauses, std::vector<std::string>{"cooling down: GPU at 88 °C (limit 85 °C)"});
        f.gpuCelsius = 79.0;
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.resumes, 1);
        f.fan = 95.0;
        f.now += 10.0;
        f.bridge->evaluatePolicy();
        f.now += 10.0;
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.pauses.back(), std::string("fan at 95% (limit 90%)"));
        f.fan = 40.0;
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.resumes, 2);
        f.fullScreen = "steam_app_1091500";
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.pauses.back(), std::string("steam_app_1091500 is full screen"));
    }

    void manualPauseWinsOverRulesClearing()
    {
        Fixture f;
        f.bridge->join();
        f.graphics = {"game.exe"};
        f.bridge->evaluatePolicy();
        f.bridge->pauseManually();
        QCOMPARE(f.peer.pauses.back(), std::string("paused by you"));
        f.graphics.clear();
        f.now += 3600.0;
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.resumes, 0);
        f.bridge->resumeManually();
        QCOMPARE(f.peer.resumes, 1);
    }

    void badTimedPauseIsLoggedNotApplied()
    {
        Fixture f;
        f.bridge->join();
        f.bridge->pauseFor(-1.0);
        QVERIFY(f.peer.pauses.empty());
        QVERIFY(!f.bridge->pauseDecision().paused);
    }

    void settingsReachPeerAndPolicy()
    {
        Fixture f;
        ResourceCaps caps;
        caps.cpuThreads = 3;
        caps.downloadBytesPerSecond = 1e6;
        f.settings->setCaps(caps);
        QCOMPARE(f.peer.caps.cpuThreads, 3);
        QCOMPARE(f.peer.caps.downloadBytesPerSecond, 1e6);
        auto rules = f.settings->pauseRules();
        rules.pauseOnGpuGraphics = false;
        f.settings->setPauseRules(rules);
        QCOMPARE(f.bridge->policy().rules().pauseOnGpuGraphics, false);
        f.bridge->join();
        f.graphics = {"game.exe"};
        f.bridge->evaluatePolicy();
        QVERIFY(f.peer.pauses.empty());
    }
};

QTEST_MAIN(TestPeerBridge)
#include "tst_peerbridge.moc"
