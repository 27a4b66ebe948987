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
//   2. another process uses the GPU for graphics (NVML graphics process list; our own process is
//      excluded by the probe);
//   3. one of the user-listed applications runs (executable names, compared case-insensitively);
//   4. on battery power;
//   5. outside the scheduled hours (a local window [start, end), may wrap past midnight);
//   6. the user is active (optional, off by default; idle time below a threshold).
// When rules 2-6 stop holding, training resumes only after they have stayed clear for the quiet
// period (default 15 s), so a game that restarts or a flickering battery state does not toggle
// the peer. A manual or timed pause that ends resumes at once (unless a rule 2-6 holds).
//
// Times: seconds. `unixSeconds` is wall-clock time; `localSecondsOfDay` is the same instant as
// seconds since local midnight (0..86399), given by the clock so DST and time zones stay outside
// this class. A pause "until 08:00" ends at the next instant whose local time is 08:00, computed
// as now + the seconds from the local time of day to 08:00 (a DST change that night shifts it by
// the hour; accepted).
//
// Threads: not thread-safe; owned by one thread (the GUI thread in the app).
#include <functional>
#include <string>
#include <vector>

namespace dedloc {

struct LocalClockReading {
    double unixSeconds = 0.0;  // seconds since 1970-01-01 UTC
    int localSecondsOfDay = 0; // 0..86399 in the user's time zone
};
using LocalClock = std::function<LocalClockReading()>;
// The system clock (std::chrono::system_clock + localtime_r).
[[nodiscard]] LocalClock systemLocalClock();

struct AutoPauseRules {
    bool pauseOnGpuGraphics = true;
    std::vector<std::string> listedApplications; // executable names ("blender", "steam")
    bool pauseOnBattery = true;
    bool scheduleEnabled = false;
    int scheduleStartSeconds = 0; // local seconds of day when training may start
    int scheduleEndSeconds = 0;   // ... and must stop; start == end means all day
    bool pauseWhenUserActive = false;
    double userIdleThresholdSeconds = 300.0; // "active" = input within this many seconds
    double quietPeriodSeconds = 15.0;        // rules must stay clear this long before resuming
};

// What the probes saw at one instant.
struct HostObservation {
    std::vector<std::string> gpuGraphicsProcesses; // names of OTHER processes drawing on the GPU
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

    // The reason an automatic rule holds for `observation` at `now`, or "" (no state change).
    [[nodiscard]] std::string automaticReason(const HostObservation &observation, const LocalClockReading &now) const;

  private:
    AutoPauseRules m_rules;
    LocalClock m_clock;
    PauseCause m_manual = PauseCause::None; // None, Manual or Timed
    double m_manualUntil = -1.0;
    bool m_autoPaused = false;
    std::string m_autoReason;
    double m_clearSince = -1.0; // when the rules were last seen clear while auto-paused
};

[[nodiscard]] const char *pauseCauseName(PauseCause cause);

} // namespace dedloc
