#include "PeerBridge.h"

#include "FullScreenProbe.h"
#include "ScreenAwakeProbe.h"
#include "LogindIdleProbe.h"
#include "Settings.h"
#include "system/HostProbe.h"
#include "util/Error.h"
#include "util/Log.h"

#include <algorithm>

namespace dedloc::ui {

HostObservation observeChosenGpus(const std::vector<GpuSample> &samples, const std::vector<int> &chosen)
{
    HostObservation o; // unknown readings stay < 0: a CPU volunteer's limits read the CPU's temperature
    for (const auto &s : samples) {
        if (s.vendor == GpuVendor::None || std::find(chosen.begin(), chosen.end(), s.index) == chosen.end())
            continue;
        o.gpuTemperatureCelsius = std::max(o.gpuTemperatureCelsius, s.temperatureCelsius);
        o.gpuPowerWatts = std::max(o.gpuPowerWatts, s.powerWatts);
        o.fanPercent = std::max(o.fanPercent, s.fanPercent);
        for (const auto &p : s.graphicsProcesses)
            if (std::find(o.gpuGraphicsProcesses.begin(), o.gpuGraphicsProcesses.end(), p.name) ==
                o.gpuGraphicsProcesses.end())
                o.gpuGraphicsProcesses.push_back(p.name);
    }
    return o;
}

PeerBridge::PeerBridge(PeerControl &peer, Settings &settings, Options options, QObject *parent)
    : QObject(parent), m_peer(peer), m_settings(settings), m_options(std::move(options)),
      m_policyClock(m_options.clock ? m_options.clock : systemLocalClock()),
      m_policy(settings.pauseRules(), m_policyClock)
{
    qRegisterMetaType<dedloc::PeerSnapshot>();
    qRegisterMetaType<dedloc::GpuSample>();
    qRegisterMetaType<std::vector<dedloc::GpuSample>>();
    qRegisterMetaType<dedloc::PauseDecision>();
    if (!m_options.gpuProbe) {
        m_gpuProbe = std::make_unique<GpuProbe>();
        m_options.gpuProbe = [probe = m_gpuProbe.get()] { return probe->sampleAll(); };
    }
    if (!m_options.hostProbe) {
        m_idleProbe = std::make_unique<LogindIdleProbe>();
        m_fullScreenProbe = std::make_unique<FullScreenProbe>();
        if (ScreenAwakeProbe::waylandSession())
            m_screenAwakeProbe = std::make_unique<ScreenAwakeProbe>();
        m_options.hostProbe = [this, probe = HostProbe()](HostObservation &o) {
            o.onBattery = probe.onBattery();
            o.cpuTemperatureCelsius = probe.cpuTemperatureCelsius();
            if (m_policy.rules().pauseOnFullScreen) {
                o.fullScreenProgram = m_fullScreenProbe->fullScreenProgram();
                if (m_screenAwakeProbe)
                    o.screenAwakeProgram = m_screenAwakeProbe->program();
            }
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
    m_gpus = m_options.gpuProbe();
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
    const ResourceCaps caps = m_settings.caps();
    m_chosenGpus = caps.gpus;
    m_peer.setCaps(caps);
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
    m_gpus = m_options.gpuProbe();
    Q_EMIT gpusSampled(m_gpus);
    HostObservation o = observeChosenGpus(m_gpus, m_chosenGpus);
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
