#include "net/TokenBucket.h"

#include "util/Error.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>

namespace dedloc {
namespace {

double defaultBurst(double rate, double burst)
{
    return burst > 0.0 ? burst : std::max(65536.0, rate / 10.0);
}

void check(double rate, double burst)
{
    if (!std::isfinite(rate) || rate < 0.0)
        throw Error("bandwidth cap must be a non-negative number of bytes per second, got " + std::to_string(rate));
    if (!std::isfinite(burst) || burst < 0.0)
        throw Error("bandwidth burst must be a non-negative number of bytes, got " + std::to_string(burst));
}

} // namespace

MonotonicClock steadyClock()
{
    return [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
}

TokenBucket::TokenBucket(double bytesPerSecond, double burstBytes, MonotonicClock clock)
    : m_clock(clock ? std::move(clock) : steadyClock())
{
    check(bytesPerSecond, burstBytes);
    m_rate = bytesPerSecond;
    m_burst = defaultBurst(bytesPerSecond, burstBytes);
    m_level = m_burst;
    m_last = m_clock();
}

void TokenBucket::setRate(double bytesPerSecond, double burstBytes)
{
    check(bytesPerSecond, burstBytes);
    std::lock_guard lock(m_mutex);
    refill(m_clock());
    m_rate = bytesPerSecond;
    m_burst = defaultBurst(bytesPerSecond, burstBytes);
    m_level = std::min(m_level, m_burst);
}

double TokenBucket::rate() const
{
    std::lock_guard lock(m_mutex);
    return m_rate;
}

double TokenBucket::burst() const
{
    std::lock_guard lock(m_mutex);
    return m_burst;
}

void TokenBucket::refill(double now)
{
    if (now > m_last)
        m_level = std::min(m_burst, m_level + (now - m_last) * m_rate);
    m_last = std::max(m_last, now);
}

double TokenBucket::reserve(std::size_t bytes)
{
    std::lock_guard lock(m_mutex);
    m_taken += bytes;
    if (m_rate <= 0.0)
        return 0.0;
    refill(m_clock());
    m_level -= double(bytes);
    return m_level >= 0.0 ? 0.0 : -m_level / m_rate;
}

void TokenBucket::acquire(std::size_t bytes)
{
    const double wait = reserve(bytes);
    if (wait > 0.0)
        std::this_thread::sleep_for(std::chrono::duration<double>(wait));
}

std::uint64_t TokenBucket::bytesTaken() const
{
    std::lock_guard lock(m_mutex);
    return m_taken;
}

double TokenBucket::level()
{
    std::lock_guard lock(m_mutex);
    refill(m_clock());
    return m_level;
}

} // namespace dedloc
