#include "system/AutoPausePolicy.h"

#include "util/Error.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace dedloc {
namespace {

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

std::string number(double v)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.0f", v);
    return text;
}

} // namespace

LocalClock systemLocalClock()
{
    return [] {
        const auto now = std::chrono::system_clock::now();
        const auto secs = std::chrono::duration<double>(now.time_since_epoch()).count();
        const std::time_t t = std::chrono::system_clock::to_time_t(now);
        std::tm tm{};
        localtime_r(&t, &tm);
        return LocalClockReading{secs, tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec, (tm.tm_wday + 6) % 7};
    };
}

const char *pauseCauseName(PauseCause cause)
{
    switch (cause) {
    case PauseCause::None:
        return "none";
    case PauseCause::Manual:
        return "manual";
    case PauseCause::Timed:
        return "timed";
    case PauseCause::Automatic:
        return "automatic";
    }
    return "?";
}

AutoPausePolicy::AutoPausePolicy(AutoPauseRules rules, LocalClock clock)
    : m_rules(std::move(rules)), m_clock(std::move(clock))
{
    if (!m_clock)
        m_clock = systemLocalClock();
    setRules(m_rules);
}

void AutoPausePolicy::setRules(AutoPauseRules rules)
{
    auto validDay = [](int s) { return s >= 0 && s < 86400; };
    for (const auto &w : rules.schedule.windows)
        if (!validDay(w.startSeconds) || !validDay(w.endSeconds) || (w.days & 0x7f) == 0 || w.days > 0x7f)
            throw Error("auto-pause schedule: a window needs days and local times of day (0..86399 s), got " +
                        std::to_string(w.startSeconds) + " and " + std::to_string(w.endSeconds));
    if (rules.quietPeriodSeconds < 0.0)
        throw Error("auto-pause quiet period must not be negative");
    if (rules.limitGraceSeconds < 0.0)
        throw Error("the grace period of the hardware limits must not be negative");
    for (const auto *l : {&rules.gpuTemperature, &rules.cpuTemperature, &rules.gpuPower, &rules.fanSpeed})
        if (l->hysteresis < 0.0 || (l->limit > 0.0 && l->hysteresis >= l->limit))
            throw Error("a hardware limit's hysteresis must be at least 0 and below the limit");
    m_rules = std::move(rules);
}

void AutoPausePolicy::pauseManually()
{
    m_manual = PauseCause::Manual;
    m_manualUntil = -1.0;
}

void AutoPausePolicy::pauseFor(double seconds)
{
    if (!(seconds > 0.0))
        throw Error("a timed pause needs a positive duration, got " + std::to_string(seconds) + " s");
    m_manual = PauseCause::Timed;
    m_manualUntil = m_clock().unixSeconds + seconds;
}

void AutoPausePolicy::pauseUntilLocalTime(int localSecondsOfDay)
{
    if (localSecondsOfDay < 0 || localSecondsOfDay >= 86400)
        throw Error("pause until: the time of day must be 0..86399 s, got " + std::to_string(localSecondsOfDay));
    const auto now = m_clock();
    int ahead = (localSecondsOfDay - now.localSecondsOfDay + 86400) % 86400;
    if (ahead == 0)
        ahead = 86400; // "until 08:00" at 08:00 means tomorrow's
    m_manual = PauseCause::Timed;
    m_manualUntil = now.unixSeconds + ahead;
}

void AutoPausePolicy::resumeManually()
{
    m_manual = PauseCause::None;
    m_manualUntil = -1.0;
    m_clearSince = -1.0;
    if (m_autoPaused)
        m_autoPaused = false; // re-armed by evaluate() if a rule still holds
}

void AutoPausePolicy::updateLimits(const HostObservation &o, double now)
{
    const double grace = std::max(0.0, m_rules.limitGraceSeconds);
    auto track = [&](LimitState &state, const HardwareLimit &rule, double reading, double defaultShare) {
        state.reading = reading;
        if (rule.limit <= 0.0 || reading < 0.0) { // no limit, or nothing known: never acts
            state = {-1.0, false, reading};
            return;
        }
        if (state.acting) {
            const double hysteresis = rule.hysteresis > 0.0 ? rule.hysteresis : defaultShare * rule.limit;
            if (reading < rule.limit - hysteresis)
                state = {-1.0, false, reading};
            return;
        }
        if (reading <= rule.limit) {
            state.overSince = -1.0;
            return;
        }
        if (state.overSince < 0.0)
            state.overSince = now;
        state.acting = now - state.overSince >= grace;
    };
    track(m_gpuTemperature, m_rules.gpuTemperature, o.gpuTemperatureCelsius, 0.1);
    track(m_cpuTemperature, m_rules.cpuTemperature, o.cpuTemperatureCelsius, 0.1);
    track(m_gpuPower, m_rules.gpuPower, o.gpuPowerWatts, 0.1);
    track(m_fanSpeed, m_rules.fanSpeed, o.fanPercent, 0.1);
}

std::string AutoPausePolicy::limitReason() const
{
    if (m_gpuTemperature.acting)
        return "cooling down: GPU at " + number(m_gpuTemperature.reading) + " °C (limit " + number(m_rules.gpuTemperature.limit) + " °C)";
    if (m_cpuTemperature.acting)
        return "cooling down: CPU at " + number(m_cpuTemperature.reading) + " °C (limit " + number(m_rules.cpuTemperature.limit) + " °C)";
    if (m_gpuPower.acting)
        return "GPU power " + number(m_gpuPower.reading) + " W (limit " + number(m_rules.gpuPower.limit) + " W)";
    if (m_fanSpeed.acting)
        return "fan at " + number(m_fanSpeed.reading) + "% (limit " + number(m_rules.fanSpeed.limit) + "%)";
    return {};
}

std::string AutoPausePolicy::automaticReason(const HostObservation &o, const LocalClockReading &now) const
{
    if (auto limit = limitReason(); !limit.empty())
        return limit;
    if (m_rules.pauseOnGpuGraphics && !o.gpuGraphicsProcesses.empty())
        return o.gpuGraphicsProcesses.front() + " is using the GPU for graphics";
    if (m_rules.pauseOnFullScreen && !o.fullScreenProgram.empty())
        return o.fullScreenProgram + " is full screen";
    if (m_rules.pauseOnFullScreen && !o.screenAwakeProgram.empty())
        return o.screenAwakeProgram + " keeps the screen awake";
    for (const auto &listed : m_rules.listedApplications) {
        if (listed.empty())
            continue;
        const auto want = lower(listed);
        for (const auto &running : o.runningProcesses)
            // the kernel truncates comm to 15 characters
            if (lower(running) == want || (running.size() == 15 && want.compare(0, 15, lower(running)) == 0))
                return listed + " is running";
    }
    if (m_rules.pauseOnBattery && o.onBattery)
        return "on battery power";
    if (m_rules.scheduleEnabled && !scheduleAllows(m_rules.schedule, now.localDayOfWeek, now.localSecondsOfDay)) {
        const auto next = nextScheduleStart(m_rules.schedule, now.localDayOfWeek, now.localSecondsOfDay);
        return next.empty() ? "outside the schedule (it has no window)" : "outside the schedule (next: " + next + ")";
    }
    if (m_rules.pauseWhenUserActive && o.userIdleSeconds >= 0.0 && o.userIdleSeconds < m_rules.userIdleThresholdSeconds)
        return "you are using the computer";
    return {};
}

PauseDecision AutoPausePolicy::evaluate(const HostObservation &observation)
{
    const auto now = m_clock();
    if (m_manual == PauseCause::Timed && now.unixSeconds >= m_manualUntil) {
        m_manual = PauseCause::None;
        m_manualUntil = -1.0;
    }

    // Automatic state is tracked even under a manual pause, so that ending the manual pause
    // resumes only when the rules are clear.
    updateLimits(observation, now.unixSeconds);
    const std::string reason = automaticReason(observation, now);
    double quietLeft = 0.0;
    if (!reason.empty()) {
        m_autoPaused = true;
        m_autoReason = reason;
        m_clearSince = -1.0;
    } else if (m_autoPaused) {
        if (m_clearSince < 0.0)
            m_clearSince = now.unixSeconds;
        const double clearFor = now.unixSeconds - m_clearSince;
        if (clearFor >= m_rules.quietPeriodSeconds) {
            m_autoPaused = false;
            m_clearSince = -1.0;
        } else {
            quietLeft = m_rules.quietPeriodSeconds - clearFor;
        }
    }

    PauseDecision d;
    if (m_manual == PauseCause::Manual) {
        d.paused = true;
        d.cause = PauseCause::Manual;
        d.reason = "paused by you";
    } else if (m_manual == PauseCause::Timed) {
        d.paused = true;
        d.cause = PauseCause::Timed;
        d.resumesAt = m_manualUntil;
        d.reason = "paused by you for " + std::to_string(long(m_manualUntil - now.unixSeconds + 59) / 60) + " more min";
    } else if (m_autoPaused) {
        d.paused = true;
        d.cause = PauseCause::Automatic;
        d.reason = m_autoReason;
        d.quietSecondsLeft = quietLeft;
        if (quietLeft > 0.0)
            d.reason += " (resuming after " + std::to_string(long(quietLeft + 0.999)) + " s of quiet)";
    }
    return d;
}

} // namespace dedloc
