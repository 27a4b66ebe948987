#pragma once
// Upload throughput as the kernel measured it (Linux tcp_info, RFC 4898's tcpEStatsAppHCThruOctetsAcked
// and the "busy" time of tcp(7)): how fast this process's bytes actually left over its TCP
// connections to given peers, whatever ZeroMQ and the kernel buffered on the way.
//
// A connection's goodput is bytes_acked / busy_time, where busy_time counts the microseconds it
// had data unacknowledged or waiting (sending, limited by the receive window or the send buffer),
// and not the time the application gave it nothing. Over several connections UploadMeter (below)
// adds up the time any of them was busy.
// This is what a speed test measures, on the round's own traffic: the slowest of this peer's
// uplink, the path and the receivers' downlinks, not a declared figure.
//
// Threads: any. The connections are found by scanning /proc/self/fd for TCP sockets whose peer is
// one of the endpoints; a socket closed and its descriptor reused by another thread meanwhile is
// caught by reading its peer address again after its statistics. Linux only; elsewhere nothing is found.
#include <cstdint>
#include <string>
#include <vector>

namespace dedloc {

struct TcpSendStats {
    std::uint64_t bytesAcked = 0; // bytes of this side the peer acknowledged
    double busySeconds = 0.0;     // seconds the connection was busy sending
    double minRttSeconds = 0.0;   // the least round trip the kernel measured on it (tcpi_min_rtt); 0: none
    int fd = -1;                  // the connection's descriptor when read
    std::string peer;             // its peer, "address|port"
};

// The upload statistics of this process's TCP connections, one per connection found: those to
// `endpoints` ("tcp://host:port" or "host:port", numeric IPv4 or IPv6 host; others are skipped)
// and, when `localPort` is not 0, those accepted on that local port (a listener's peers).
[[nodiscard]] std::vector<TcpSendStats> tcpSendStatsTo(const std::vector<std::string> &endpoints,
                                                       std::uint16_t localPort = 0);

// The upload of one exchange (a round) over connections that open and close during it (a
// reducer's peers close theirs as soon as they have their results). The constructor reads the
// connections open then as a baseline: what they had moved before counts for nothing. Each
// sample() adds what every connection moved since the last sample, and to the busy time the time
// the connections gained busy in that interval, summed but at most the interval: connections busy
// at the same time share the uplink, connections busy one after the other (a reducer's parts,
// then its results) add up. So a connection closed after a sample keeps what it had moved.
// Threads: one at a time.
class UploadMeter final {
public:
    UploadMeter(std::vector<std::string> endpoints, std::uint16_t localPort);
    void sample();
    // Bytes moved over the busy time, bytes/s; -1 when too little moved to tell: under
    // `minBytes`, or busy under 20 ms.
    [[nodiscard]] double rate(std::uint64_t minBytes = 256 * 1024) const;
    // Bytes acknowledged since the baseline.
    [[nodiscard]] std::uint64_t bytes() const { return m_bytes; }
    // The longest of the least round trips of the connections that moved bytes since the
    // baseline, seen at the samples (seconds; 0: none): the path to the farthest peer of this
    // exchange without its queues, what a sender's buffer must cover.
    [[nodiscard]] double roundTrip() const { return m_roundTrip; }

private:
    std::vector<std::string> m_endpoints;
    std::uint16_t m_localPort;
    std::vector<TcpSendStats> m_last; // the connections open at the last sample
    std::uint64_t m_bytes = 0;
    double m_busy = 0.0;
    double m_roundTrip = 0.0;
    double m_lastSample = 0.0; // steady-clock seconds
};

} // namespace dedloc
