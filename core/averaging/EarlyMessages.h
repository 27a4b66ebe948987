#pragma once
// Messages a reducer's ROUTER receives for rounds that have not started here yet (a faster
// member began its round earlier), internal to averaging/ButterflyAllReduce.cpp
// (docs/PROTOCOL.md "Bounds on what a peer claims"):
//   - EarlyMessages: kept per group until that round starts, at most PendingLimit messages of at
//     most PendingBytes in all, none older than PendingAge; beyond the bounds they are dropped;
//   - RouterDrainer: a thread that reads the ROUTER every DrainPeriod while no round runs, so
//     that what anyone sends between rounds moves into EarlyMessages (bounded) instead of
//     waiting in ZeroMQ's receive queue (unbounded) until the next round. What it read has not
//     passed a round's download cap: the round that takes it does that then (EarlyMessage::paced).
//     Each pass also reads and drops what the idle kept connections received
//     (averaging/DealerPool.h), while a round runs too, and closes those idle too long; a
//     client-mode endpoint (no ROUTER) runs it for those alone.
//
// Threads: EarlyMessages and the ROUTER are used under the endpoint's round mutex (the pool guards
// itself): a round holds
// it for its whole run; the drainer takes it only when free (try_lock), for one pass of at most
// DrainBudget messages, so a round waits at most that pass to start.
// Errors: none thrown; a message without a readable group is dropped (logged at debug level:
// between rounds no member list tells who sent it).
#include "averaging/DealerPool.h"

#include <zmq.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <condition_variable>
#include <vector>

namespace dedloc::allreduce {

using EarlyClock = std::chrono::steady_clock;

inline constexpr std::size_t PendingLimit = 4096;
inline constexpr std::size_t PendingBytes = 64U << 20;
inline constexpr auto PendingAge = std::chrono::seconds(120);
inline constexpr auto DrainPeriod = std::chrono::milliseconds(50);
inline constexpr int DrainBudget = 1024;

// The group a ROUTER message ([routing id, header, payload]) names in its header ("g"); nothing
// when the header is not a CBOR map with a string group. The header is bounded in size and
// depth before anything is read (a frame may hold 16 MiB of nesting).
[[nodiscard]] std::optional<std::string> groupOf(const std::vector<zmq::message_t> &frames);

struct EarlyMessage {
    EarlyClock::time_point arrived;
    std::vector<zmq::message_t> frames;
    std::size_t bytes = 0;
    bool paced = false; // its bytes were already taken from a round's download cap
};

struct EarlyMessages {
    std::multimap<std::string, EarlyMessage> byGroup;
    std::size_t bytes = 0; // of every kept message's frames

    // Keeps the message unless a bound would be passed (or the group name is over 64 bytes).
    // `paced`: read by a round that took its bytes from the download cap (the drainer's are not).
    void add(const std::string &group, std::vector<zmq::message_t> frames, bool paced);
    // Forgets every message older than PendingAge at `now`.
    void expire(EarlyClock::time_point now);
    // Removes and returns the messages of `group` (after expire(now)).
    [[nodiscard]] std::vector<EarlyMessage> take(const std::string &group, EarlyClock::time_point now);
};

class RouterDrainer final {
public:
    // Starts the thread; `router` (null: client mode), `roundMutex`, `pending` and `pool` must
    // outlive this object.
    RouterDrainer(zmq::socket_t *router, std::mutex &roundMutex, EarlyMessages &pending, DealerPool &pool);
    // Stops the thread (within one pass).
    ~RouterDrainer();
    RouterDrainer(const RouterDrainer &) = delete;
    RouterDrainer &operator=(const RouterDrainer &) = delete;

private:
    void drainOnce();

    zmq::socket_t *m_router;
    std::mutex &m_roundMutex;
    EarlyMessages &m_pending;
    DealerPool &m_pool;
    std::mutex m_stopMutex;
    std::condition_variable m_stopSignal;
    bool m_stopping = false;
    std::thread m_thread;
};

} // namespace dedloc::allreduce
