#include "system/WeeklySchedule.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <sstream>

namespace dedloc {
namespace {

constexpr std::array<const char *, 7> DayNames{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
constexpr std::array<const char *, 7> FullDayNames{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"};

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

std::string trim(const std::string &s)
{
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos)
        return {};
    return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

int dayNamed(const std::string &word)
{
    const auto w = lower(trim(word));
    for (int d = 0; d < 7; ++d)
        if (w == lower(DayNames[std::size_t(d)]) || w == FullDayNames[std::size_t(d)])
            return d;
    return -1;
}

// "Mon-Fri,Sun" -> bits; -1 with `error` set.
int parseDays(const std::string &text, std::string &error)
{
    if (lower(text) == "daily")
        return 0x7f;
    int bits = 0;
    std::stringstream parts(text);
    for (std::string part; std::getline(parts, part, ',');) {
        const auto dash = part.find('-');
        const int first = dayNamed(part.substr(0, dash));
        const int last = dash == std::string::npos ? first : dayNamed(part.substr(dash + 1));
        if (first < 0 || last < 0) {
            error = "unknown day in \"" + trim(part) + "\" (use Mon, Tue, Wed, Thu, Fri, Sat, Sun or daily)";
            return -1;
        }
        for (int d = first;; d = (d + 1) % 7) { // a range may wrap: Fri-Mon
            bits |= 1 << d;
            if (d == last)
                break;
        }
    }
    return bits;
}

// "18:30" -> seconds; "24:00" allowed only as an end.
int parseClock(const std::string &text, bool end)
{
    int h = -1, m = -1;
    char colon = 0, extra = 0;
    if (std::sscanf(text.c_str(), "%2d%c%2d%c", &h, &colon, &m, &extra) != 3 || colon != ':')
        return -1;
    if (text.size() != 5 && text.size() != 4)
        return -1;
    if (h == 24 && m == 0 && end)
        return 0;
    if (h < 0 || h > 23 || m < 0 || m > 59)
        return -1;
    return h * 3600 + m * 60;
}

std::string clockText(int seconds)
{
    char text[8];
    std::snprintf(text, sizeof text, "%02d:%02d", seconds / 3600 % 24, seconds / 60 % 60);
    return text;
}

std::string daysText(int bits)
{
    if (bits == 0x7f)
        return "daily";
    std::string out;
    for (int d = 0; d < 7;) {
        if (!(bits & (1 << d))) {
            ++d;
            continue;
        }
        int e = d;
        while (e + 1 < 7 && (bits & (1 << (e + 1))))
            ++e;
        if (!out.empty())
            out += ",";
        out += DayNames[std::size_t(d)];
        if (e > d)
            out += std::string("-") + DayNames[std::size_t(e)];
        d = e + 1;
    }
    return out;
}

std::optional<ScheduleWindow> parseWindow(const std::string &line, std::string &error)
{
    std::string rest = trim(line);
    const auto space = rest.find_first_of(" \t");
    if (space == std::string::npos) {
        error = "a window is days and hours, e.g. \"Mon-Fri 18:00-08:00\"";
        return std::nullopt;
    }
    const int days = parseDays(rest.substr(0, space), error);
    if (days < 0)
        return std::nullopt;
    const std::string hours = lower(trim(rest.substr(space)));
    if (hours == "all day")
        return ScheduleWindow{std::uint8_t(days), 0, 0};
    const auto dash = hours.find('-');
    const int start = dash == std::string::npos ? -1 : parseClock(trim(hours.substr(0, dash)), false);
    const int end = dash == std::string::npos ? -1 : parseClock(trim(hours.substr(dash + 1)), true);
    if (start < 0 || end < 0) {
        error = "hours are HH:MM-HH:MM (24 h) or \"all day\", got \"" + hours + "\"";
        return std::nullopt;
    }
    if (start == 0 && end == 0 && trim(hours.substr(dash + 1)) == "24:00")
        return ScheduleWindow{std::uint8_t(days), 0, 0}; // 00:00-24:00 is the whole day
    if (start == end) {
        error = "a window from " + clockText(start) + " to " + clockText(end) + " is empty (write \"all day\")";
        return std::nullopt;
    }
    return ScheduleWindow{std::uint8_t(days), start, end};
}

bool covers(const ScheduleWindow &w, int day, int t)
{
    const bool today = w.days & (1 << day);
    if (w.startSeconds == w.endSeconds)
        return today;
    if (w.startSeconds < w.endSeconds)
        return today && t >= w.startSeconds && t < w.endSeconds;
    const bool yesterday = w.days & (1 << ((day + 6) % 7)); // started the day before, runs past midnight
    return (today && t >= w.startSeconds) || (yesterday && t < w.endSeconds);
}

} // namespace

ParsedSchedule parseWeeklySchedule(const std::string &text)
{
    WeeklySchedule schedule;
    std::string normalised = text;
    std::replace(normalised.begin(), normalised.end(), ';', '\n');
    std::stringstream lines(normalised);
    int number = 0;
    for (std::string line; std::getline(lines, line);) {
        ++number;
        if (trim(line).empty())
            continue;
        std::string error;
        const auto window = parseWindow(line, error);
        if (!window)
            return {std::nullopt, "line " + std::to_string(number) + " (\"" + trim(line) + "\"): " + error};
        schedule.windows.push_back(*window);
    }
    return {schedule, {}};
}

std::string formatWeeklySchedule(const WeeklySchedule &schedule)
{
    std::string out;
    for (const auto &w : schedule.windows) {
        if (!out.empty())
            out += "\n";
        out += daysText(w.days) + " ";
        out += w.startSeconds == w.endSeconds ? "all day" : clockText(w.startSeconds) + "-" + (w.endSeconds == 0 ? "24:00" : clockText(w.endSeconds));
    }
    return out;
}

bool scheduleAllows(const WeeklySchedule &schedule, int dayOfWeek, int secondsOfDay)
{
    return std::any_of(schedule.windows.begin(), schedule.windows.end(),
                       [&](const ScheduleWindow &w) { return covers(w, dayOfWeek, secondsOfDay); });
}

std::string nextScheduleStart(const WeeklySchedule &schedule, int dayOfWeek, int secondsOfDay)
{
    long best = -1;
    std::string text;
    for (const auto &w : schedule.windows)
        for (int ahead = 0; ahead <= 7; ++ahead) {
            const int day = (dayOfWeek + ahead) % 7;
            const long at = long(ahead) * 86400 + w.startSeconds - secondsOfDay;
            if (!(w.days & (1 << day)) || at <= 0)
                continue;
            if (best < 0 || at < best) {
                best = at;
                text = std::string(DayNames[std::size_t(day)]) + " " + clockText(w.startSeconds);
            }
            break;
        }
    return text;
}

} // namespace dedloc
