#pragma once
// A stand-in for the swarm peer, for the UI tests: implements dedloc::PeerControl with a worker
// thread that walks Connecting -> Syncing -> Training, adds `microBatch` samples every `stepMs`
// while training (sleeping, or spinning the CPU with burnCpu), completes a global step every
// `targetBatch` swarm samples (Averaging for one micro-batch, a loss point, a log line), and obeys
// pause() within one micro-batch (<< 2 s). Two other fake peers appear in the snapshot.
#include "face/PeerControl.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace dedloc::test {

class FakePeer final : public PeerControl {
  public:
    struct Options {
        int microBatch = 4;    // samples per micro-batch
        int stepMs = 20;       // wall time of one micro-batch
        bool burnCpu = false;  // spin instead of sleeping (GUI responsiveness test)
        long targetBatch = 64; // samples per global step (the fake swarm adds as many as we do)
        int phaseMs = 60;      // Connecting and Syncing last this long
    };

    FakePeer() : FakePeer(Options{}) {}
    explicit FakePeer(Options options);
    ~FakePeer() override;

    void start() override;
    void pause(const std::string &reason) override;
    void resume() override;
    void stop() override;
    void setCaps(const ResourceCaps &caps) override;
    [[nodiscard]] PeerSnapshot snapshot() const override;

    [[nodiscard]] long long samplesComputed() const { return m_samples.load(); }
    [[nodiscard]] int pauseCalls() const { return m_pauseCalls.load(); }
    [[nodiscard]] int resumeCalls() const { return m_resumeCalls.load(); }
    [[nodiscard]] ResourceCaps caps() const;

  private:
    void run();
    void setState(PeerState state, const std::string &detail = {});
    bool waitFor(int ms); // false when stopping

    Options m_options;
    mutable std::mutex m_mutex;
    std::condition_variable m_wake;
    PeerSnapshot m_snapshot;
    ResourceCaps m_caps;
    std::string m_pauseReason;
    bool m_pauseRequested = false;
    bool m_stopRequested = false;
    std::thread m_thread;
    std::atomic<long long> m_samples{0};
    std::atomic<int> m_pauseCalls{0}, m_resumeCalls{0};
};

} // namespace dedloc::test
