// PeerBridge (ui/PeerBridge.h) against a scripted PeerControl: snapshots are coalesced by
// sequence, commands are forwarded, the policy pauses and resumes the peer once per change and a
// manual pause wins over the automatic rules; the policy watches only the GPUs chosen to train
// (Settings::caps().gpus), and a choice made in Settings reaches the peer.
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
    // Two GPUs: GPU 0 (chosen by default) and GPU 1.
    std::vector<std::string> graphics, graphics1;
    double gpuCelsius = 60.0, gpuWatts = 120.0, fan = 40.0;
    double gpu1Celsius = 50.0, gpu1Watts = 80.0, fan1 = 30.0;
    double cpuCelsius = -1.0;
    std::string fullScreen;
    std::unique_ptr<PeerBridge> bridge;
    Fixture()
    {
        PeerBridge::Options o;
        o.snapshotIntervalMs = 1000000; // the test ticks by hand
        o.probeEveryTicks = 1000000;
        o.clock = [this] { return LocalClockReading{now, 12 * 3600}; };
        o.gpuProbe = [this] {
            auto gpu = [](int index, const std::vector<std::string> &procs, double celsius, double watts,
                          double fanPercent) {
                GpuSample s;
                s.vendor = GpuVendor::Nvidia;
                s.index = index;
                s.name = "Fake " + std::to_string(index);
                for (const auto &g : procs)
                    s.graphicsProcesses.push_back({unsigned(100 + index), g, 0});
                s.temperatureCelsius = celsius;
                s.powerWatts = watts;
                s.fanPercent = fanPercent;
                return s;
            };
            return std::vector<GpuSample>{gpu(0, graphics, gpuCelsius, gpuWatts, fan),
                                          gpu(1, graphics1, gpu1Celsius, gpu1Watts, fan1)};
        };
        o.hostProbe = [this](HostObservation &h) {
            h.fullScreenProgram = fullScreen;
            h.cpuTemperatureCelsius = cpuCelsius;
        };
        bridge = std::make_unique<PeerBridge>(peer, *settings, std::move(o));
    }
};

// The volunteer ticks GPUs: Settings changes, the bridge hands the caps to the peer.
void choose(Fixture &f, std::vector<int> gpus)
{
    auto caps = f.settings->caps();
    caps.gpus = std::move(gpus);
    f.settings->setCaps(caps);
    QCOMPARE(f.peer.caps.gpus, caps.gpus);
}

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
        o.gpuProbe = [] { return std::vector<GpuSample>{GpuSample{}}; };
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

    // A game on a GPU the peer does not train on pauses nothing; on a chosen GPU it does; with
    // no GPU chosen (the CPU trains) no GPU's graphics pause.
    void onlyTheChosenGpusGraphicsPause()
    {
        Fixture f;
        auto rules = f.settings->pauseRules();
        rules.quietPeriodSeconds = 0.0;
        f.settings->setPauseRules(rules);
        f.bridge->join();
        f.graphics1 = {"game.exe"};
        f.bridge->evaluatePolicy();
        QVERIFY(f.peer.pauses.empty()); // GPU 1 is not chosen
        QVERIFY(!f.bridge->pauseDecision().paused);
        choose(f, {0, 1});
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.pauses, std::vector<std::string>{"game.exe is using the GPU for graphics"});
        choose(f, {0}); // the volunteer leaves GPU 1 to the game
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.resumes, 1);
        f.graphics = {"blender"};
        choose(f, {});
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.pauses.size(), std::size_t(1)); // the CPU trains: GPU graphics do not matter
        QVERIFY(!f.bridge->pauseDecision().paused);
    }

    // The heat limits read the chosen GPUs only (the hottest of them); with none chosen the GPU
    // readings are unknown and the CPU's temperature still counts.
    void limitsReadTheChosenGpusOnly()
    {
        Fixture f;
        auto rules = f.settings->pauseRules();
        rules.gpuTemperature = {85.0, 5.0};
        rules.cpuTemperature = {90.0, 5.0};
        rules.gpuPower = {200.0, 0.0};
        rules.limitGraceSeconds = 0.0;
        rules.quietPeriodSeconds = 0.0;
        f.settings->setPauseRules(rules);
        f.bridge->join();
        f.gpu1Celsius = 95.0;
        f.gpu1Watts = 250.0;
        f.bridge->evaluatePolicy();
        QVERIFY(f.peer.pauses.empty()); // a hot GPU that does not train
        choose(f, {0, 1});
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.pauses, std::vector<std::string>{"cooling down: GPU at 95 °C (limit 85 °C)"});
        f.gpu1Celsius = 70.0; // GPU 1 cools; its power is still over, GPU 0 is within both
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.pauses.back(), std::string("GPU power 250 W (limit 200 W)"));
        choose(f, {0});
        f.gpuCelsius = 70.0;
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.resumes, 1);
        f.gpuCelsius = 99.0;
        choose(f, {}); // the CPU trains: GPU readings unknown
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.pauses.size(), std::size_t(2));
        f.cpuCelsius = 93.0; // ... and the CPU's limit still acts
        f.bridge->evaluatePolicy();
        QCOMPARE(f.peer.pauses.back(), std::string("cooling down: CPU at 93 °C (limit 90 °C)"));
    }

    // Every GPU's sample is kept and emitted, whatever the choice.
    void everyGpuIsSampledAndEmitted()
    {
        Fixture f;
        choose(f, {});
        QSignalSpy sampled(f.bridge.get(), &PeerBridge::gpusSampled);
        f.gpu1Celsius = 77.0;
        f.bridge->evaluatePolicy();
        QCOMPARE(sampled.count(), 1);
        const auto samples = sampled.last().at(0).value<std::vector<GpuSample>>();
        QCOMPARE(samples.size(), std::size_t(2));
        QCOMPARE(samples[1].index, 1);
        QCOMPARE(samples[1].temperatureCelsius, 77.0);
        QCOMPARE(f.bridge->gpus().size(), std::size_t(2));
    }

    // The highest known reading among the chosen GPUs; each graphics process once; the CPU
    // sample and indices not chosen count for nothing.
    void observationOfTheChosenGpus()
    {
        GpuSample a, b, c, cpu;
        a.vendor = b.vendor = c.vendor = GpuVendor::Nvidia;
        a.index = 0;
        b.index = 1;
        c.index = 2;
        a.temperatureCelsius = 60.0;
        a.powerWatts = -1.0; // unknown
        a.fanPercent = 80.0;
        a.graphicsProcesses = {{1, "game", 0}};
        b.temperatureCelsius = 70.0;
        b.powerWatts = 150.0;
        b.fanPercent = -1.0;
        b.graphicsProcesses = {{1, "game", 0}, {2, "obs", 0}};
        c.temperatureCelsius = 99.0;
        c.graphicsProcesses = {{3, "other", 0}};
        cpu.graphicsProcesses = {{4, "cpu?", 0}};
        const std::vector<GpuSample> all{cpu, a, b, c};
        const auto o = observeChosenGpus(all, {0, 1, 7});
        QCOMPARE(o.gpuTemperatureCelsius, 70.0);
        QCOMPARE(o.gpuPowerWatts, 150.0);
        QCOMPARE(o.fanPercent, 80.0);
        QCOMPARE(o.gpuGraphicsProcesses, (std::vector<std::string>{"game", "obs"}));
        const auto none = observeChosenGpus(all, {});
        QCOMPARE(none.gpuTemperatureCelsius, -1.0);
        QCOMPARE(none.gpuPowerWatts, -1.0);
        QCOMPARE(none.fanPercent, -1.0);
        QVERIFY(none.gpuGraphicsProcesses.empty());
        QCOMPARE(observeChosenGpus({cpu}, {0}).gpuGraphicsProcesses.size(), std::size_t(0));
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
        QCOMPARE(f.peer.caps.gpus, std::vector<int>{0}); // the default choice
        caps.gpus = {1, 0};
        f.settings->setCaps(caps);
        QCOMPARE(f.peer.caps.gpus, (std::vector<int>{0, 1}));
        QCOMPARE(f.peer.caps.cpuThreads, 3);
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
