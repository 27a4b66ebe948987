#include "FakePeer.h"

#include "util/Log.h"

#include <chrono>
#include <cmath>

namespace dedloc::test {

FakePeer::FakePeer(Options options) : m_options(options)
{
    m_snapshot.peerId = "f00dfeed00000000000000000000000000000000000000000000000000000001";
    m_snapshot.runId = "fake-run";
    m_snapshot.runName = "Fake run";
    m_snapshot.deviceName = "cpu (fake)";
    m_snapshot.targetBatchSize = options.targetBatch;
    m_snapshot.allTime.samples = 1000; // "kept across restarts"
    m_snapshot.allTime.computeSeconds = 3600.0;
    m_snapshot.allTime.stepsTakenPart = 12;
}

FakePeer::~FakePeer()
{
    stop();
}

void FakePeer::start()
{
    std::lock_guard lock(m_mutex);
    if (m_thread.joinable())
        return;
    m_stopRequested = false;
    m_thread = std::thread([this] { run(); });
}

void FakePeer::pause(const std::string &reason)
{
    ++m_pauseCalls;
    std::lock_guard lock(m_mutex);
    m_pauseRequested = true;
    m_pauseReason = reason;
    if (m_snapshot.state == PeerState::Paused) {
        m_snapshot.stateDetail = reason; // pausing twice keeps the newer reason
        ++m_snapshot.sequence;
    }
    m_wake.notify_all();
}

void FakePeer::resume()
{
    ++m_resumeCalls;
    std::lock_guard lock(m_mutex);
    m_pauseRequested = false;
    m_wake.notify_all();
}

void FakePeer::stop()
{
    {
        std::lock_guard lock(m_mutex);
        m_stopRequested = true;
        m_wake.notify_all();
    }
    if (m_thread.joinable() && m_thread.get_id() != std::this_thread::get_id())
        m_thread.join();
}

void FakePeer::setCaps(const ResourceCaps &caps)
{
    std::lock_guard lock(m_mutex);
    m_caps = caps;
}

ResourceCaps FakePeer::caps() const
{
    std::lock_guard lock(m_mutex);
    return m_caps;
}

PeerSnapshot FakePeer::snapshot() const
{
    std::lock_guard lock(m_mutex);
    return m_snapshot;
}

void FakePeer::setState(PeerState state, const std::string &detail)
{
    std::lock_guard lock(m_mutex);
    if (m_snapshot.state == state && m_snapshot.stateDetail == detail)
        return;
    m_snapshot.state = state;
    m_snapshot.stateDetail = detail;
    ++m_snapshot.sequence;
}

bool FakePeer::waitFor(int ms)
{
    std::unique_lock lock(m_mutex);
    m_wake.wait_for(lock, std::chrono::milliseconds(ms), [this] { return m_stopRequested; });
    return !m_stopRequested;
}

void FakePeer::run()
{
    log::info("swarm", "fake peer: connecting");
    setState(PeerState::Connecting);
    if (!waitFor(m_options.phaseMs))
        return setState(PeerState::Stopped);
    setState(PeerState::Syncing);
    if (!waitFor(m_options.phaseMs))
        return setState(PeerState::Stopped);
    log::info("swarm", "fake peer: training");
    bool paused = false;
    double swarmSamples = 0.0;
    for (;;) {
        bool wantPause = false;
        std::string reason;
        {
            std::lock_guard lock(m_mutex);
            if (m_stopRequested)
                break;
            wantPause = m_pauseRequested;
            reason = m_pauseReason;
        }
        if (wantPause) {
            if (!paused)
                log::info("swarm", "fake peer: paused (" + reason + ")");
            paused = true;
            setState(PeerState::Paused, reason);
            std::unique_lock lock(m_mutex);
            m_wake.wait_for(lock, std::chrono::milliseconds(50),
                            [this] { return m_stopRequested || !m_pauseRequested; });
            continue;
        }
        if (paused) {
            paused = false;
            setState(PeerState::Syncing); // resynchronise after a pause
            if (!waitFor(m_options.phaseMs))
                break;
        }
        // One micro-batch.
        const auto begin = std::chrono::steady_clock::now();
        if (m_options.burnCpu) {
            volatile double sink = 0.0;
            while (std::chrono::steady_clock::now() - begin < std::chrono::milliseconds(m_options.stepMs))
                for (int i = 0; i < 1000; ++i)
                    sink = sink + std::sqrt(double(i));
        } else if (!waitFor(m_options.stepMs)) {
            break;
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        m_samples += m_options.microBatch;
        bool stepped = false;
        {
            std::lock_guard lock(m_mutex);
            auto &s = m_snapshot;
            s.state = PeerState::Training;
            s.stateDetail.clear();
            s.session.samples += m_options.microBatch;
            s.session.computeSeconds += seconds;
            s.allTime.samples += m_options.microBatch;
            s.allTime.computeSeconds += seconds;
            s.localSamplesPerSecond = m_options.microBatch / std::max(seconds, 1e-3);
            s.swarmSamplesPerSecond = 2.0 * s.localSamplesPerSecond;
            swarmSamples += 2.0 * m_options.microBatch; // the other trainer keeps pace
            if (swarmSamples >= double(m_options.targetBatch)) {
                swarmSamples = 0.0;
                ++s.globalEpoch;
                s.localEpoch = s.globalEpoch;
                ++s.session.stepsTakenPart;
                ++s.allTime.stepsTakenPart;
                s.lastLoss = 9.0 * std::exp(-0.05 * double(s.globalEpoch));
                s.lossHistory.push_back({s.globalEpoch, s.lastLoss});
                if (s.lossHistory.size() > 512)
                    s.lossHistory.erase(s.lossHistory.begin());
                s.lastRoundStatus = "averaged with 2 peers (0.1 s)";
                s.state = PeerState::Averaging;
                stepped = true;
            }
            s.swarmSamplesAccumulated = swarmSamples;
            s.etaSeconds = s.swarmSamplesPerSecond > 0
                               ? (double(m_options.targetBatch) - swarmSamples) / s.swarmSamplesPerSecond
                               : -1.0;
            s.shareOfSwarm = 0.5;
            s.trainers = 2;
            s.auxiliaries = 1;
            s.monitors = 1;
            s.clientModePeers = 1;
            s.peers = {
                {"a11ce00000000000000000000000000000000000000000000000000000000002", PeerRole::Trainer, true, false,
                 s.globalEpoch, long(swarmSamples / 2), s.localSamplesPerSecond, 0.5},
                {"b0b0000000000000000000000000000000000000000000000000000000000003", PeerRole::Auxiliary, false, false,
                 s.globalEpoch, 0, 0.0, 1.5},
                {"c0ffee0000000000000000000000000000000000000000000000000000000004", PeerRole::Monitor, false, false,
                 s.globalEpoch, 0, 0.0, 2.5},
            };
            ++s.sequence;
        }
        if (stepped)
            log::info("swarm", "fake peer: global step done");
    }
    setState(PeerState::Stopped);
}

} // namespace dedloc::test
