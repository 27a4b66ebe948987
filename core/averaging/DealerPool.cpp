#include "averaging/DealerPool.h"

#include "util/Log.h"

#include <zmq_addon.hpp>

#include <algorithm>

#include <time.h>

namespace dedloc::allreduce {

namespace {

// Reads and drops what waits on `socket`, at most `budget` messages; false when the socket failed.
bool dropWaiting(zmq::socket_t &socket, int budget, std::size_t &dropped)
{
    try {
        for (int n = 0; n < budget; ++n) {
            std::vector<zmq::message_t> frames;
            if (!zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait))
                return true;
            ++dropped;
        }
        return true;
    } catch (const zmq::error_t &e) {
        log::debug("allreduce", std::string("an idle connection failed: ") + e.what());
        return false;
    }
}

} // namespace

PoolClock::time_point PoolClock::now() noexcept
{
#ifdef CLOCK_BOOTTIME
    timespec t{};
    if (clock_gettime(CLOCK_BOOTTIME, &t) == 0)
        return time_point(std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec));
#endif
    return time_point(std::chrono::duration_cast<duration>(std::chrono::steady_clock::now().time_since_epoch()));
}

bool DealerKey::serves(const DealerKey &wanted) const
{
    const bool near = wanted.sendBuffer == sendBuffer ||
                      (wanted.sendBuffer > 0 && sendBuffer > 0 && sendBuffer * 4 <= wanted.sendBuffer * 5 &&
                       wanted.sendBuffer * 4 <= sendBuffer * 5);
    return near && endpoint == wanted.endpoint && publicKey == wanted.publicKey && sendQueue == wanted.sendQueue &&
           receiveQueue == wanted.receiveQueue;
}

DealerPool::DealerPool(std::size_t capacity, PoolClock::duration maxIdle) : m_capacity(capacity), m_maxIdle(maxIdle) {}

DealerPool::~DealerPool() = default;

void DealerPool::expire(PoolClock::time_point now)
{
    std::erase_if(m_idle, [&](const Idle &i) { return now - i.since > m_maxIdle; });
}

std::size_t DealerPool::size() const
{
    std::lock_guard lock(m_mutex);
    return m_idle.size();
}

std::unique_ptr<zmq::socket_t> DealerPool::take(const DealerKey &wanted, PoolClock::time_point now, DealerKey *opened)
{
    std::lock_guard lock(m_mutex);
    expire(now);
    const auto it = std::find_if(m_idle.begin(), m_idle.end(), [&](const Idle &i) { return i.key.serves(wanted); });
    if (it == m_idle.end())
        return nullptr;
    auto socket = std::move(it->socket);
    if (opened)
        *opened = it->key;
    m_idle.erase(it);
    std::size_t dropped = 0;
    // Whatever waits there is no answer to the round about to start: nothing was asked on it since.
    if (!dropWaiting(*socket, 1 << 16, dropped))
        return nullptr;
    if (dropped > 0)
        log::debug("allreduce", "dropped " + std::to_string(dropped) + " message(s) an idle connection received");
    return socket;
}

void DealerPool::give(DealerKey key, std::unique_ptr<zmq::socket_t> socket, PoolClock::time_point now)
{
    if (!socket || m_capacity == 0)
        return;
    std::lock_guard lock(m_mutex);
    expire(now);
    // One kept connection per key: a second (a group that named the same reducer twice) closes.
    if (std::any_of(m_idle.begin(), m_idle.end(), [&](const Idle &i) { return i.key == key; }))
        return;
    if (m_idle.size() >= m_capacity)
        m_idle.erase(m_idle.begin());
    m_idle.push_back({std::move(key), std::move(socket), now});
}

std::size_t DealerPool::drain(PoolClock::time_point now, int budget)
{
    std::lock_guard lock(m_mutex);
    expire(now);
    std::size_t dropped = 0;
    std::erase_if(m_idle, [&](Idle &i) {
        const int left = budget - static_cast<int>(dropped);
        return left > 0 && !dropWaiting(*i.socket, left, dropped);
    });
    return dropped;
}

} // namespace dedloc::allreduce
