#pragma once
// Wall-clock time as fractional Unix seconds: the time base of signed DHT records, matchmaking
// deadlines, bans and metrics, comparable between peers (std::chrono::system_clock, so it may
// jump when the system clock is set; durations inside one process use steady_clock instead).
#include <chrono>
#include <cstdint>

namespace dedloc {

[[nodiscard]] inline double unixNow()
{
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Whole Unix seconds (the validity times of access tokens, security/AccessToken.h).
[[nodiscard]] inline std::int64_t unixSeconds()
{
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

} // namespace dedloc
