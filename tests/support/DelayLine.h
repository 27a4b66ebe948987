#pragma once
// Latency for the emulated internet (EmulatedInternet.h) on a kernel without netem: a fixed
// delay on every IPv4 packet a host sends off its own network, added in user space, packet by
// packet (TCP's own round trip sees it, as on a real long path; a relay that ends TCP would hide
// it). Inside the host's namespace a TUN device (dly0) gets more specific routes than eth0's
// (two /25 halves of the public /24, or two /1 halves of the default route behind a home
// router); a thread reads each packet from it, holds it `delayMs` milliseconds, and sends it out
// of eth0 through a raw IP socket bound to eth0, so the link's tbf (its upload rate) still
// applies after the delay. The host's round trip to another such host is twice the delay.
// Packets to the host's own LAN (192.168.x.0/24, e.g. to its router) are not delayed.
//
// Needs root and /dev/net/tun. Threads: one of its own per line, which enters the namespace;
// the object itself is not thread-safe. Errors: the constructor throws std::runtime_error naming
// what failed (device, socket, route); in flight, a packet the kernel refuses to send (its tbf
// queue full) is dropped, as a router's would be, and counted.
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace dedloc::test {

class DelayLine final {
  public:
    // `routes`: the destinations to delay, as "ADDRESS/PREFIX" more specific than eth0's route
    // to them; `source`: the host's own address (the routes' source).
    DelayLine(const std::string &ns, double delayMs, const std::vector<std::string> &routes, const std::string &source);
    ~DelayLine();
    DelayLine(const DelayLine &) = delete;
    DelayLine &operator=(const DelayLine &) = delete;

    // Packets dropped because eth0 refused them (its queue was full) or the hold queue overflowed.
    [[nodiscard]] std::uint64_t dropped() const { return m_dropped.load(); }

    static constexpr const char *Device = "dly0";

  private:
    void run(int tun, int raw);

    double m_delayMs;
    int m_tun = -1, m_raw = -1, m_wake[2] = {-1, -1};
    std::atomic<std::uint64_t> m_dropped{0};
    std::thread m_thread;
};

} // namespace dedloc::test
