#include "net/TcpThroughput.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>

#include <arpa/inet.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace dedloc {

namespace {

// A peer's address as getpeername() gives it: family, 16 address bytes (IPv4 in the first 4),
// port in host order.
struct PeerAddress {
    int family = 0;
    unsigned char bytes[16]{};
    std::uint16_t port = 0;

    bool operator==(const PeerAddress &o) const
    {
        return family == o.family && port == o.port && std::memcmp(bytes, o.bytes, sizeof bytes) == 0;
    }
};

std::optional<PeerAddress> parseEndpoint(std::string e)
{
    if (e.rfind("tcp://", 0) == 0)
        e = e.substr(6);
    const auto colon = e.rfind(':');
    if (colon == std::string::npos || colon == 0)
        return std::nullopt;
    std::string host = e.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    PeerAddress a;
    try {
        const long port = std::stol(e.substr(colon + 1));
        if (port <= 0 || port > 65535)
            return std::nullopt;
        a.port = static_cast<std::uint16_t>(port);
    } catch (const std::exception &) {
        return std::nullopt;
    }
    if (inet_pton(AF_INET, host.c_str(), a.bytes) == 1)
        a.family = AF_INET;
    else if (inet_pton(AF_INET6, host.c_str(), a.bytes) == 1)
        a.family = AF_INET6;
    else
        return std::nullopt;
    return a;
}

std::optional<PeerAddress> peerOf(int fd)
{
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getpeername(fd, reinterpret_cast<sockaddr *>(&ss), &len) != 0)
        return std::nullopt;
    PeerAddress a;
    if (ss.ss_family == AF_INET) {
        const auto *in = reinterpret_cast<const sockaddr_in *>(&ss);
        a.family = AF_INET;
        std::memcpy(a.bytes, &in->sin_addr, 4);
        a.port = ntohs(in->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(&ss);
        a.family = AF_INET6;
        std::memcpy(a.bytes, &in6->sin6_addr, 16);
        a.port = ntohs(in6->sin6_port);
    } else {
        return std::nullopt;
    }
    return a;
}

std::uint16_t localPortOf(int fd)
{
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return ntohs(reinterpret_cast<const sockaddr_in *>(&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(reinterpret_cast<const sockaddr_in6 *>(&ss)->sin6_port);
    return 0;
}

std::string textOf(const PeerAddress &a)
{
    char text[INET6_ADDRSTRLEN] = {};
    inet_ntop(a.family, a.bytes, text, sizeof text);
    return std::string(text) + "|" + std::to_string(a.port);
}

} // namespace

std::vector<TcpSendStats> tcpSendStatsTo(const std::vector<std::string> &endpoints, std::uint16_t localPort)
{
    std::vector<PeerAddress> wanted;
    for (const auto &e : endpoints)
        if (auto a = parseEndpoint(e))
            wanted.push_back(*a);
    std::vector<TcpSendStats> out;
    if (wanted.empty() && localPort == 0)
        return out;
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) {
        int fd = -1;
        try {
            fd = std::stoi(it->path().filename().string());
        } catch (const std::exception &) {
            continue;
        }
        std::error_code linkError;
        if (std::filesystem::read_symlink(it->path(), linkError).string().rfind("socket:", 0) != 0)
            continue;
        int type = 0;
        socklen_t typeLen = sizeof type;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &typeLen) != 0 || type != SOCK_STREAM)
            continue;
        const auto peer = peerOf(fd);
        if (!peer)
            continue; // not connected (a listener)
        if (std::find(wanted.begin(), wanted.end(), *peer) == wanted.end()
            && (localPort == 0 || localPortOf(fd) != localPort))
            continue;
        tcp_info info{};
        socklen_t infoLen = sizeof info;
        if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &infoLen) != 0
            || infoLen < offsetof(tcp_info, tcpi_busy_time) + sizeof info.tcpi_busy_time)
            continue; // a kernel older than 4.10 has no busy time
        if (const auto again = peerOf(fd); !again || !(*again == *peer))
            continue; // closed and reused meanwhile by another thread
        const double minRtt = info.tcpi_min_rtt == ~0u ? 0.0 : static_cast<double>(info.tcpi_min_rtt) * 1e-6;
        out.push_back({info.tcpi_bytes_acked, static_cast<double>(info.tcpi_busy_time) * 1e-6, minRtt, fd,
                       textOf(*peer)});
    }
    return out;
}

namespace {

double steadySeconds()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace

UploadMeter::UploadMeter(std::vector<std::string> endpoints, std::uint16_t localPort)
    : m_endpoints(std::move(endpoints)), m_localPort(localPort), m_last(tcpSendStatsTo(m_endpoints, m_localPort)),
      m_lastSample(steadySeconds())
{
}

void UploadMeter::sample()
{
    const double now = steadySeconds();
    auto current = tcpSendStatsTo(m_endpoints, m_localPort);
    double gained = 0.0;
    for (const auto &c : current) {
        const auto last = std::find_if(m_last.begin(), m_last.end(),
                                       [&](const TcpSendStats &s) { return s.fd == c.fd && s.peer == c.peer; });
        // Not seen before, or fewer bytes than last time (the descriptor now holds a new
        // connection to the same peer): all it moved is new.
        const bool same = last != m_last.end() && c.bytesAcked >= last->bytesAcked;
        const std::uint64_t moved = c.bytesAcked - (same ? last->bytesAcked : 0);
        m_bytes += moved;
        gained += std::max(0.0, c.busySeconds - (same ? last->busySeconds : 0.0));
        // Only a connection this exchange used: a listener also holds idle ones kept by peers
        // of earlier exchanges, whose paths say nothing about this one's.
        if (moved > 0)
            m_roundTrip = std::max(m_roundTrip, c.minRttSeconds);
    }
    m_busy += std::min(gained, now - m_lastSample);
    m_last = std::move(current);
    m_lastSample = now;
}

double UploadMeter::rate(std::uint64_t minBytes) const
{
    if (m_bytes < minBytes || m_busy < 0.02)
        return -1.0;
    return static_cast<double>(m_bytes) / m_busy;
}

} // namespace dedloc
