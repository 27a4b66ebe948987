#include "DelayLine.h"
#include "NetnsThread.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdexcept>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dedloc::test {

namespace {

using Clock = std::chrono::steady_clock;

// Bytes held at once: at 100 Mbit/s and a 200 ms delay, 2.5 MB are in flight.
constexpr std::size_t MaxHeldBytes = 16u << 20;

void must(const std::string &command)
{
    if (std::system((command + " >/dev/null 2>&1").c_str()) != 0)
        throw std::runtime_error("delay line: \"" + command + "\" failed");
}

// The TUN device and the raw socket, made inside namespace `ns` (file descriptors keep their
// namespace).
void openInNamespace(const std::string &ns, int &tun, int &raw, std::string &error)
{
    NetnsThread inside(ns);
    const bool entered = inside.run([&] {
        tun = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
        ifreq ifr{};
        ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
        std::strncpy(ifr.ifr_name, DelayLine::Device, IFNAMSIZ - 1);
        if (tun < 0 || ::ioctl(tun, TUNSETIFF, &ifr) != 0) {
            error = std::string("cannot make a TUN device: ") + std::strerror(errno);
            return;
        }
        raw = ::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW); // IP_HDRINCL implied
        const char eth0[] = "eth0";
        if (raw < 0 || ::setsockopt(raw, SOL_SOCKET, SO_BINDTODEVICE, eth0, sizeof eth0) != 0)
            error = std::string("cannot make a raw socket on eth0: ") + std::strerror(errno);
    });
    if (!entered)
        error = "cannot enter namespace " + ns;
}

} // namespace

DelayLine::DelayLine(const std::string &ns, double delayMs, const std::vector<std::string> &routes,
                     const std::string &source)
    : m_delayMs(delayMs)
{
    std::string error;
    openInNamespace(ns, m_tun, m_raw, error);
    if (error.empty() && ::pipe2(m_wake, O_CLOEXEC | O_NONBLOCK) != 0)
        error = std::string("pipe: ") + std::strerror(errno);
    try {
        if (!error.empty())
            throw std::runtime_error("delay line in " + ns + ": " + error);
        // eth0 receives what the peers' delay lines send: its replies leave through dly0.
        must("ip netns exec " + ns + " sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.eth0.rp_filter=0");
        must("ip -n " + ns + " link set " + Device + " up");
        for (const auto &r : routes)
            must("ip -n " + ns + " route add " + r + " dev " + Device + " src " + source);
    } catch (...) {
        for (int fd : {m_tun, m_raw, m_wake[0], m_wake[1]})
            if (fd >= 0)
                ::close(fd);
        throw;
    }
    m_thread = std::thread([this] { run(m_tun, m_raw); });
}

DelayLine::~DelayLine()
{
    const char stop = 1;
    (void)!::write(m_wake[1], &stop, 1);
    if (m_thread.joinable())
        m_thread.join();
    for (int fd : {m_tun, m_raw, m_wake[0], m_wake[1]})
        ::close(fd);
}

void DelayLine::run(int tun, int raw)
{
    struct Held {
        Clock::time_point due;
        std::vector<unsigned char> packet;
    };
    std::deque<Held> held;
    std::size_t heldBytes = 0;
    const auto delay = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(m_delayMs));
    std::vector<unsigned char> buffer(65536);
    for (;;) {
        timespec wait{};
        timespec *timeout = nullptr;
        if (!held.empty()) {
            const auto left = std::max(Clock::duration::zero(), held.front().due - Clock::now());
            const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
            wait = {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
            timeout = &wait;
        }
        pollfd fds[2] = {{tun, POLLIN, 0}, {m_wake[0], POLLIN, 0}};
        if (::ppoll(fds, 2, timeout, nullptr) < 0 && errno != EINTR)
            return;
        if (fds[1].revents)
            return;
        for (ssize_t got; (got = ::read(tun, buffer.data(), buffer.size())) > 0;) {
            if (heldBytes + static_cast<std::size_t>(got) > MaxHeldBytes || got < 20 || (buffer[0] >> 4) != 4) {
                ++m_dropped;
                continue;
            }
            held.push_back({Clock::now() + delay, {buffer.begin(), buffer.begin() + got}});
            heldBytes += static_cast<std::size_t>(got);
        }
        const auto now = Clock::now();
        while (!held.empty() && held.front().due <= now) {
            const auto &p = held.front().packet;
            sockaddr_in to{};
            to.sin_family = AF_INET;
            std::memcpy(&to.sin_addr, p.data() + 16, 4); // the IPv4 header's destination
            if (::sendto(raw, p.data(), p.size(), 0, reinterpret_cast<const sockaddr *>(&to), sizeof to) < 0)
                ++m_dropped;
            heldBytes -= p.size();
            held.pop_front();
        }
    }
}

} // namespace dedloc::test
