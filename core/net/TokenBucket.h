#pragma once
// Token bucket for the upload / download caps of the data plane.
//
// The bucket holds up to `burstBytes` tokens and refills at `bytesPerSecond`. reserve(n) takes n
// tokens at once, letting the level go negative (debt), and returns how long the caller must wait
// before sending so that, over any interval, the bytes sent stay within
// burst + rate * interval (the classic token-bucket bound; RFC 2697 / Tanenbaum, Computer
// Networks, 5.4.2). A message larger than the burst is therefore allowed, followed by a pause.
// A rate of 0 means "no cap": every reservation returns 0.
//
// Units: bytes, bytes per second, seconds. Clock: monotonic seconds, injectable (tests move a fake
// clock instead of sleeping). Threads: every method is thread-safe (one mutex); acquire() sleeps
// on the calling thread without holding the mutex, so several senders share one cap.
// Errors: a negative or non-finite rate or burst throws dedloc::Error.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>

namespace dedloc {

using MonotonicClock = std::function<double()>; // seconds, never decreasing
[[nodiscard]] MonotonicClock steadyClock();

class TokenBucket final {
  public:
    // burstBytes 0 picks max(64 KiB, rate / 10): about 100 ms of traffic.
    explicit TokenBucket(double bytesPerSecond = 0.0, double burstBytes = 0.0, MonotonicClock clock = steadyClock());

    // Changes the cap; the current level is kept (clamped to the new burst).
    void setRate(double bytesPerSecond, double burstBytes = 0.0);
    [[nodiscard]] double rate() const;
    [[nodiscard]] double burst() const;

    // Takes `bytes` tokens now; returns the seconds to wait before sending them (0 = at once).
    [[nodiscard]] double reserve(std::size_t bytes);
    // reserve() and sleep that long on this thread.
    void acquire(std::size_t bytes);
    // Tokens available now (negative while in debt).
    [[nodiscard]] double level();
    // Bytes reserved since construction, capped or not (what went through this bucket).
    [[nodiscard]] std::uint64_t bytesTaken() const;

  private:
    void refill(double now);

    mutable std::mutex m_mutex;
    MonotonicClock m_clock;
    double m_rate = 0.0;
    double m_burst = 0.0;
    double m_level = 0.0;
    double m_last = 0.0;
    std::uint64_t m_taken = 0;
};

} // namespace dedloc
