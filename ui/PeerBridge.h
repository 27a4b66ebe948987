#pragma once
// The one object through which the window talks to a peer (docs/ARCHITECTURE.md "Threads";
// ui/README.md). It holds a PeerControl& and nothing else of the core.
//
// Core -> UI: a QTimer on the GUI thread polls PeerControl::snapshot() 4 times a second (the
// snapshot is a copy made under the peer's mutex; it never waits for a step or the network),
// skips a snapshot whose sequence did not change, and emits snapshotChanged() once per change:
// the coalescing point, so widgets never see more than ~4 updates a second.
// Once a second it samples the probes (every GPU, or the CPU, with temperatures, power and fan;
// battery, running programs, a full-screen window: FullScreenProbe, on Wayland also the
// programs keeping the screen awake: ScreenAwakeProbe, user idle time from logind: LogindIdleProbe) and emits gpusSampled(), then runs the AutoPausePolicy and calls
// pause(reason) / resume() on the peer when the decision changes. A manual pause always wins
// (policy rule 1). The policy sees the GPUs the peer trains on (Settings::caps().gpus) only: the
// highest temperature, power and fan among them, and their graphics processes; with none chosen
// (the CPU trains) no GPU reading and no GPU graphics process.
// UI -> core: join(), pauseManually(), pauseFor(), pauseUntilTomorrow(), resumeManually(),
// applySettings(): each forwards at once; PeerControl's methods return quickly by contract.
//
// Clock and probes are injected (Options) so tests drive time and the host's state.
// Threads: GUI thread only.
#include "face/PeerControl.h"
#include "system/AutoPausePolicy.h"
#include "system/GpuProbe.h"

#include <QObject>
#include <QTimer>

#include <functional>
#include <memory>
#include <vector>

namespace dedloc::ui {

class FullScreenProbe;
class LogindIdleProbe;
class ScreenAwakeProbe;
class Settings;

// The GPU part of the auto-pause observation: of the samples whose index is in `chosen`, the
// highest known temperature, power and fan and their graphics processes (each name once); the
// CPU sample and GPUs not chosen count for nothing.
[[nodiscard]] HostObservation observeChosenGpus(const std::vector<GpuSample> &samples, const std::vector<int> &chosen);

class PeerBridge final : public QObject {
    Q_OBJECT

  public:
    struct Options {
        int snapshotIntervalMs = 250; // 4 Hz
        int probeEveryTicks = 4;      // probes and policy once a second
        LocalClock clock;             // empty: the system clock
        // Empty: the real probes (GpuProbe::sampleAll, HostProbe, FullScreenProbe,
        // LogindIdleProbe). Tests pass fixed answers. gpuProbe answers one sample per GPU in
        // index order, or one CPU sample (GpuVendor::None); hostProbe runs after the chosen GPUs
        // filled their part of the observation, and may override it.
        std::function<std::vector<GpuSample>()> gpuProbe;
        std::function<void(HostObservation &)> hostProbe;
    };

    PeerBridge(PeerControl &peer, Settings &settings, Options options, QObject *parent = nullptr);
    ~PeerBridge() override;

    [[nodiscard]] const PeerSnapshot &snapshot() const { return m_snapshot; }
    [[nodiscard]] const std::vector<GpuSample> &gpus() const { return m_gpus; } // the last sample
    [[nodiscard]] const PauseDecision &pauseDecision() const { return m_decision; }
    [[nodiscard]] bool joined() const { return m_joined; }
    [[nodiscard]] AutoPausePolicy &policy() { return m_policy; }

  public Q_SLOTS:
    void join();
    void pauseManually();
    void pauseFor(double seconds);
    void pauseUntilTomorrow(); // Settings::resumeTomorrowAt(), next occurrence
    void resumeManually();
    void applySettings(); // caps to the peer, rules to the policy
    // One poll (the timer calls it; tests may call it after moving the clock).
    void tick();
    // Probes + policy now, without waiting for the next probe tick.
    void evaluatePolicy();

  Q_SIGNALS:
    void snapshotChanged(const dedloc::PeerSnapshot &snapshot);
    void gpusSampled(const std::vector<dedloc::GpuSample> &samples);
    void pauseDecisionChanged(const dedloc::PauseDecision &decision);
    void joinedChanged(bool joined);

  private:
    void applyDecision(const PauseDecision &d);

    PeerControl &m_peer;
    Settings &m_settings;
    Options m_options;
    std::unique_ptr<GpuProbe> m_gpuProbe;
    std::unique_ptr<LogindIdleProbe> m_idleProbe;
    std::unique_ptr<FullScreenProbe> m_fullScreenProbe;
    std::unique_ptr<ScreenAwakeProbe> m_screenAwakeProbe; // Wayland sessions only
    LocalClock m_policyClock;
    AutoPausePolicy m_policy;
    QTimer m_timer;
    PeerSnapshot m_snapshot;
    bool m_haveSnapshot = false;
    std::vector<GpuSample> m_gpus;
    std::vector<int> m_chosenGpus; // Settings::caps().gpus, as of the last applySettings()
    PauseDecision m_decision;
    bool m_peerPaused = false; // we asked the peer to pause
    std::string m_pauseReason; // ... with this reason
    bool m_joined = false;
    int m_tick = 0;
};

} // namespace dedloc::ui

Q_DECLARE_METATYPE(dedloc::PeerSnapshot)
Q_DECLARE_METATYPE(dedloc::GpuSample)
Q_DECLARE_METATYPE(std::vector<dedloc::GpuSample>)
Q_DECLARE_METATYPE(dedloc::PauseDecision)
