#pragma once
// Connections kept across all-reduce rounds (libp2p under hivemind keeps its connections too;
// the paper does not say): the DEALERs a member opened to the other reducers of a round, kept
// after it so that the next round with the same peer sends on a connection already set up,
// internal to averaging/ButterflyAllReduce.cpp (docs/PROTOCOL.md "Butterfly all-reduce data
// plane").
//
// Why: every round opened n - 1 connections per member, each with its CURVE handshake and a fresh
// TCP slow start that overran a home router's queue together with the others (docs/BENCHMARKS.md,
// retransmissions), and a swarm's peers churned through ports. A kept connection remembers its
// path (TCP keeps the slow-start threshold) and costs nothing to set up.
//
// Which connections are kept: only one that carried a whole round, every part sent and every
// RESULT back (PartSender::keepConnections), so nothing of that round is still queued in either
// direction and the next round's first message on it is the next round's. Its key holds all that
// fixed it when it was opened: the reducer's endpoint and key and the socket's queue and buffer
// sizes (a round that wants other sizes opens a new one). At most `capacity` idle connections
// are kept, none idle longer than `maxIdle`; beyond that the longest idle closes. What arrives on
// an idle one (nothing, from an honest reducer) is read and dropped every 50 ms (drain(), also
// while a round runs), so that an idle connection holds no memory for a stranger.
//
// Idle time counts time the machine slept (PoolClock is CLOCK_BOOTTIME): a laptop that wakes
// after two minutes or more opens new connections instead of sending into ones its peers and
// their routers have dropped meanwhile.
//
// Threads: any; the pool guards itself. A taken socket belongs to the round that took it until
// it is given back; an idle one only to the pool (the between-rounds drainer reads idle ones
// even while a round runs). Errors: none thrown; ZeroMQ errors on an idle socket close it.
#include <zmq.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dedloc::allreduce {

// Monotonic time that includes suspend (Linux CLOCK_BOOTTIME; elsewhere the steady clock).
struct PoolClock {
    using duration = std::chrono::nanoseconds;
    using rep = duration::rep;
    using period = duration::period;
    using time_point = std::chrono::time_point<PoolClock>;
    static constexpr bool is_steady = true;
    static time_point now() noexcept;
};

// Idle connections kept per endpoint: a round of the default group size (64, the manifest's
// averaging.group_size) leaves at most 63, so all of them stay; a larger group keeps 64.
inline constexpr std::size_t DealerPoolCapacity = 64;
inline constexpr auto DealerPoolMaxIdle = std::chrono::seconds(120);

// What fixed a DEALER when it was opened.
struct DealerKey {
    std::string endpoint;                      // the reducer's ROUTER ("tcp://host:port")
    std::array<unsigned char, 32> publicKey{}; // its identity key (CURVE server key when secured)
    int sendQueue = 0;                         // ZMQ_SNDHWM, messages
    int sendBuffer = 0;                        // SO_SNDBUF, bytes (0: the kernel's default)
    int receiveQueue = 0;                      // ZMQ_RCVHWM, messages (0: unbounded)
    bool operator==(const DealerKey &) const = default;
    // Whether a socket opened with this key can serve a round that wants `wanted`: all equal but
    // the send buffer, which may be within 25 % (it follows the uplink measured in each round,
    // which moves by a few percent from one round to the next).
    [[nodiscard]] bool serves(const DealerKey &wanted) const;
};

class DealerPool final {
  public:
    explicit DealerPool(std::size_t capacity = DealerPoolCapacity, PoolClock::duration maxIdle = DealerPoolMaxIdle);
    ~DealerPool();
    DealerPool(const DealerPool &) = delete;
    DealerPool &operator=(const DealerPool &) = delete;

    // A kept connection whose key serves `wanted`, removed from the pool, with whatever it
    // received while idle read and dropped, and in `*opened` (if given) the key it was opened
    // with (what to give it back under); null when none is kept (or it was idle over maxIdle).
    [[nodiscard]] std::unique_ptr<zmq::socket_t> take(const DealerKey &wanted, PoolClock::time_point now,
                                                      DealerKey *opened = nullptr);
    // Keeps `socket` (a connected DEALER opened with `key`) for a later round; beyond the capacity
    // the connection idle longest closes.
    void give(DealerKey key, std::unique_ptr<zmq::socket_t> socket, PoolClock::time_point now);
    // Reads and drops at most `budget` messages that idle connections received, and closes those
    // idle longer than maxIdle at `now`. Returns the messages dropped.
    std::size_t drain(PoolClock::time_point now, int budget);
    // Idle connections kept.
    [[nodiscard]] std::size_t size() const;

  private:
    struct Idle {
        DealerKey key;
        std::unique_ptr<zmq::socket_t> socket;
        PoolClock::time_point since;
    };
    void expire(PoolClock::time_point now);

    mutable std::mutex m_mutex; // guards m_idle and the idle sockets
    std::size_t m_capacity;
    PoolClock::duration m_maxIdle;
    std::vector<Idle> m_idle; // oldest first
};

} // namespace dedloc::allreduce
