#include "PeerBridge.h"

#include "FullScreenProbe.h"
#include "LogindIdleProbe.h"
#include "Settings.h"
#include "system/HostProbe.h"
#include "util/Error.h"
#include "util/Log.h"

namespace dedloc::ui {

PeerBridge::PeerBridge(PeerControl &peer, Settings &settings, Options options, QObject *parent)
    : QObject(parent), m_peer(peer), m_settings(settings), m_options(std::move(options)),
      m_policyClock(m_options.clock ? m_options.clock : systemLocalClock()),
      m_policy(settings.pauseRules(), m_policyClock)
{
    qRegisterMetaType<dedloc::PeerSnapshot>();
    qRegisterMetaType<dedloc::GpuSample>();
    qRegisterMetaType<dedloc::PauseDecision>();
    if (!m_options.gpuProbe) {
        m_gpuProbe = std::make_unique<GpuProbe>();
        m_options.gpuProbe = [probe = m_gpuProbe.get()] { return probe->sample(); };
    }
    if (!m_options.hostProbe) {
        m_idleProbe = std::make_unique<LogindIdleProbe>();
        m_fullScreenProbe = std::make_unique<FullScreenProbe>();
        m_options.hostProbe = [this, probe = HostProbe()](HostObservation &o) {
            o.onBattery = probe.onBattery();
            o.cpuTemperatureCelsius = probe.cpuTemperatureCelsius();
            if (m_policy.rules().pauseOnFullScreen)
                o.fullScreenProgram = m_fullScreenProbe->fullScreenProgram();
            // Walking /proc costs a few ms on the GUI thread: only when a program is listed.
            if (!m_policy.rules().listedApplications.empty())
                o.runningProcesses = probe.runningProcesses();
            o.userIdleSeconds = m_idleProbe->idleSeconds(m_policyClock().unixSeconds);
        };
    }
    m_options.probeEveryTicks = std::max(1, m_options.probeEveryTicks);
    connect(&m_timer, &QTimer::timeout, this, &PeerBridge::tick);
    m_timer.start(m_options.snapshotIntervalMs);
    connect(&m_settings, &Settings::changed, this, &PeerBridge::applySettings);
    applySettings();
    m_gpu = m_options.gpuProbe();
}

PeerBridge::~PeerBridge() = default;

void PeerBridge::join()
{
    if (m_joined)
        return;
    m_joined = true;
    log::info("ui", "joining the run");
    m_peer.start();
    Q_EMIT joinedChanged(true);
    evaluatePolicy();
    tick();
}

void PeerBridge::pauseManually()
{
    m_policy.pauseManually();
    evaluatePolicy();
}

void PeerBridge::pauseFor(double seconds)
{
    try {
        m_policy.pauseFor(seconds);
    } catch (const Error &e) {
        log::error("ui", e.what());
        return;
    }
    evaluatePolicy();
}

void PeerBridge::pauseUntilTomorrow()
{
    m_policy.pauseUntilLocalTime(m_settings.resumeTomorrowAt());
    evaluatePolicy();
}

void PeerBridge::resumeManually()
{
    m_policy.resumeManually();
    evaluatePolicy();
}

void PeerBridge::applySettings()
{
    try {
        m_policy.setRules(m_settings.pauseRules());
    } catch (const Error &e) {
        log::error("ui", std::string("auto-pause settings ignored: ") + e.what());
    }
    m_peer.setCaps(m_settings.caps());
}

void PeerBridge::tick()
{
    if (++m_tick % m_options.probeEveryTicks == 0)
        evaluatePolicy();
    PeerSnapshot s = m_peer.snapshot();
    if (m_haveSnapshot && s.sequence == m_snapshot.sequence)
        return;
    m_snapshot = std::move(s);
    m_haveSnapshot = true;
    Q_EMIT snapshotChanged(m_snapshot);
}

void PeerBridge::evaluatePolicy()
{
    m_gpu = m_options.gpuProbe();
    Q_EMIT gpuSampled(m_gpu);
    HostObservation o;
    if (m_gpu.vendor != GpuVendor::None) { // a CPU volunteer's limits read the CPU's temperature
        o.gpuTemperatureCelsius = m_gpu.temperatureCelsius;
        o.gpuPowerWatts = m_gpu.powerWatts;
        o.fanPercent = m_gpu.fanPercent;
    }
    for (const auto &p : m_gpu.graphicsProcesses)
        o.gpuGraphicsProcesses.push_back(p.name);
    m_options.hostProbe(o);
    applyDecision(m_policy.evaluate(o));
}

void PeerBridge::applyDecision(const PauseDecision &d)
{
    const bool changed = d.paused != m_decision.paused || d.reason != m_decision.reason || d.cause != m_decision.cause;
    m_decision = d;
    if (changed)
        Q_EMIT pauseDecisionChanged(d);
    if (!m_joined)
        return;
    if (d.paused && (!m_peerPaused || d.reason != m_pauseReason)) {
        if (!m_peerPaused)
            log::info("ui", "pausing: " + d.reason);
        m_peer.pause(d.reason);
        m_peerPaused = true;
        m_pauseReason = d.reason;
    } else if (!d.paused && m_peerPaused) {
        log::info("ui", "resuming");
        m_peer.resume();
        m_peerPaused = false;
        m_pauseReason.clear();
    }
}

} // namespace dedloc::ui
