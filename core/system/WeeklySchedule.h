#pragma once
// When the volunteer lets the app train: windows of local time on chosen days of the week,
// several per day (auto-pause rule "outside the schedule", system/AutoPausePolicy.h).
//
// Text form, one window per line (or separated by ';'), as the Settings dialog shows it:
//     Mon-Fri 18:00-08:00      weekday evenings into the next morning
//     Sat,Sun all day
//     Wed 12:00-13:30
//     daily 02:00-06:00
// Days: mon tue wed thu fri sat sun (any case, full names too), lists with ',', ranges with '-'
// (wrapping: Fri-Mon), or "daily". Times: HH:MM-HH:MM in 24 h (24:00 ends at midnight), or
// "all day". A window whose end is before its start runs past midnight into the next day: the
// days name where it starts. Empty text: no window (the schedule, when on, never allows).
//
// Units: seconds of the local day (0..86399), days 0 = Monday .. 6 = Sunday.
// Errors: parseWeeklySchedule says what is wrong and where; nothing throws.
// Threads: free functions, no shared state.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dedloc {

struct ScheduleWindow {
    std::uint8_t days = 0x7f; // bit d set: the window starts on day d (0 = Monday)
    int startSeconds = 0;     // local seconds of day
    int endSeconds = 0;       // start == end: all day; end < start: past midnight
    bool operator==(const ScheduleWindow &) const = default;
};

struct WeeklySchedule {
    std::vector<ScheduleWindow> windows;
    bool operator==(const WeeklySchedule &) const = default;
};

struct ParsedSchedule {
    std::optional<WeeklySchedule> schedule;
    std::string error; // "line 2 (\"Mon-Fry 18:00-08:00\"): unknown day \"Fry\""
};

[[nodiscard]] ParsedSchedule parseWeeklySchedule(const std::string &text);
// The text form, one window per line; parseWeeklySchedule(formatWeeklySchedule(s)) == s.
[[nodiscard]] std::string formatWeeklySchedule(const WeeklySchedule &schedule);

// Whether some window covers local time `secondsOfDay` of day `dayOfWeek`.
[[nodiscard]] bool scheduleAllows(const WeeklySchedule &schedule, int dayOfWeek, int secondsOfDay);
// The next instant a window opens after (dayOfWeek, secondsOfDay), as "Tue 18:00"; "" if none.
[[nodiscard]] std::string nextScheduleStart(const WeeklySchedule &schedule, int dayOfWeek, int secondsOfDay);

} // namespace dedloc
