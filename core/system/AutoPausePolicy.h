#pragma once
// When the volunteer's machine should stop training by itself, and the manual
// pauses of the tray (plain, "for 1 hour", "until tomorrow").
//
// Pure logic: no I/O, no clock of its own. The caller (ui/PeerBridge) samples the probes
// (GpuProbe, HostProbe) and the injected clock once per tick and calls evaluate(); the answer says
// whether the peer should be paused now and why. The policy never touches the peer itself.
//
// Rules, checked in this order (the first one that holds gives the reason shown):
//   1. a manual pause always wins: plain (never ends by itself), for a duration, or until the next
//      occurrence of a local time of day;
//   2. a hardware limit the volunteer set acts: GPU temperature, CPU temperature, GPU board
//      power, fan speed. A limit starts to act once its reading has stayed above it for the grace
//      period (default 30 s: a short spike does not pause), and stops once the reading is below
//      limit - hysteresis (temperatures: the set degrees, default 5 °C; power and fan: 10% of
//      the limit), so the machine cools down before training heats it again. An unknown reading
//      (< 0) never acts;
//   3. another process uses the GPU for graphics (NVML graphics process list; our own process is
//      excluded by the probe);
//   4. a program shows full screen (a game, a film; the probe excludes this app's own windows),
//      or, on Wayland, where other programs' windows are invisible, keeps the screen awake;
//   5. one of the user-listed applications runs (executable names, compared case-insensitively);
//   6. on battery power;
//   7. outside the weekly schedule (windows of local time on chosen days, system/WeeklySchedule.h);
//   8. the user is active (optional, off by default; idle time below a threshold).
// When rules 2-8 stop holding, training resumes only after they have stayed clear for the quiet
// period (default 15 s), so a game that restarts or a flickering battery state does not toggle
// the peer. A manual or timed pause that ends resumes at once (unless a rule 2-8 holds).
//
// Times: seconds. `unixSeconds` is wall-clock time; `localSecondsOfDay` is the same instant as
// seconds since local midnight (0..86399), given by the clock so DST and time zones stay outside
// this class. A pause "until 08:00" ends at the next instant whose local time is 08:00, computed
// as now + the seconds from the local time of day to 08:00 (a DST change that night shifts it by
// the hour; accepted).
//
// Threads: not thread-safe; owned by one thread (the GUI thread in the app).
#include "system/WeeklySchedule.h"

#include <functional>
#include <string>
#include <vector>

namespace dedloc {

struct LocalClockReading {
    double unixSeconds = 0.0;  // seconds since 1970-01-01 UTC
    int localSecondsOfDay = 0; // 0..86399 in the user's time zone
    int localDayOfWeek = 0;    // 0 = Monday .. 6 = Sunday, the same instant's local day
};
using LocalClock = std::function<LocalClockReading()>;
// The system clock (std::chrono::system_clock + localtime_r).
[[nodiscard]] LocalClock systemLocalClock();

// A limit on one hardware reading (rule 2). limit <= 0: no limit.
struct HardwareLimit {
    double limit = 0.0;
    double hysteresis = 0.0; // the reading must fall below limit - hysteresis to clear
};

struct AutoPauseRules {
    HardwareLimit gpuTemperature{0.0, 5.0}; // degrees C
    HardwareLimit cpuTemperature{0.0, 5.0}; // degrees C
    HardwareLimit gpuPower{0.0, 0.0};       // watts; hysteresis 0: 10% of the limit
    HardwareLimit fanSpeed{0.0, 0.0};       // percent of the fan's maximum; hysteresis 0: 10%
    double limitGraceSeconds = 30.0;        // above a limit this long before it acts
    bool pauseOnGpuGraphics = true;
    bool pauseOnFullScreen = true;
    std::vector<std::string> listedApplications; // executable names ("blender", "steam")
    bool pauseOnBattery = true;
    bool scheduleEnabled = false;
    WeeklySchedule schedule;      // when on: train only inside its windows
    bool pauseWhenUserActive = false;
    double userIdleThresholdSeconds = 300.0; // "active" = input within this many seconds
    double quietPeriodSeconds = 15.0;        // rules must stay clear this long before resuming
};

// What the probes saw at one instant.
struct HostObservation {
    double gpuTemperatureCelsius = -1.0; // < 0: unknown (never acts)
    double cpuTemperatureCelsius = -1.0;
    double gpuPowerWatts = -1.0;
    double fanPercent = -1.0;
    std::vector<std::string> gpuGraphicsProcesses; // names of OTHER processes drawing on the GPU
    std::string fullScreenProgram;                 // the full-screen window's program; "" none or unknown
    std::string screenAwakeProgram; // Wayland: a program keeping the screen awake (rule 4); "" none
    std::vector<std::string> runningProcesses;     // executable names of running processes
    bool onBattery = false;
    double userIdleSeconds = -1.0; // < 0: unknown (the rule is then ignored)
};

enum class PauseCause { None, Manual, Timed, Automatic };

struct PauseDecision {
    bool paused = false;
    PauseCause cause = PauseCause::None;
    std::string reason;            // for the snapshot / tray: "paused by you", "on battery power"
    double resumesAt = -1.0;       // Timed: unix seconds when it ends; otherwise < 0
    double quietSecondsLeft = 0.0; // Automatic, rules clear but still waiting: seconds to resume
};

class AutoPausePolicy final {
  public:
    AutoPausePolicy(AutoPauseRules rules, LocalClock clock);

    void setRules(AutoPauseRules rules);
    [[nodiscard]] const AutoPauseRules &rules() const { return m_rules; }

    // Manual pauses replace each other; resumeManually() ends any of them. A plain pause never
    // ends by itself. Throws dedloc::Error for a duration <= 0 or a time of day out of 0..86399.
    void pauseManually();
    void pauseFor(double seconds);
    void pauseUntilLocalTime(int localSecondsOfDay); // next occurrence, at least 1 s ahead
    // Ends a manual pause. Automatic rules that still hold keep the peer paused (their reason is
    // shown); rules that cleared do not wait for the quiet period.
    void resumeManually();

    // Call once per tick with what the probes see now.
    [[nodiscard]] PauseDecision evaluate(const HostObservation &observation);

    // The reason an automatic rule holds for `observation` at `now`, or "" (no state change; the
    // hardware limits are those evaluate() last found acting).
    [[nodiscard]] std::string automaticReason(const HostObservation &observation, const LocalClockReading &now) const;

  private:
    // Rule 2's state for one reading: since when it is above the limit, and whether it acts.
    struct LimitState {
        double overSince = -1.0;
        bool acting = false;
        double reading = -1.0; // the last one, for the reason
    };
    void updateLimits(const HostObservation &observation, double now);
    [[nodiscard]] std::string limitReason() const;

    AutoPauseRules m_rules;
    LimitState m_gpuTemperature, m_cpuTemperature, m_gpuPower, m_fanSpeed;
    LocalClock m_clock;
    PauseCause m_manual = PauseCause::None; // None, Manual or Timed
    double m_manualUntil = -1.0;
    bool m_autoPaused = false;
    std::string m_autoReason;
    double m_clearSince = -1.0; // when the rules were last seen clear while auto-paused
};

[[nodiscard]] const char *pauseCauseName(PauseCause cause);

} // namespace dedloc
