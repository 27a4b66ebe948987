#include "averaging/EarlyMessages.h"

#include "net/WireMessage.h"
#include "util/JsonReader.h"
#include "util/Log.h"

#include <nlohmann/json.hpp>
#include <zmq_addon.hpp>

#include <span>

namespace dedloc::allreduce {

std::optional<std::string> groupOf(const std::vector<zmq::message_t> &frames)
{
    if (frames.size() < 2)
        return std::nullopt;
    try {
        const std::span<const std::uint8_t> header(frames[1].data<std::uint8_t>(), frames[1].size());
        if (header.size() > MaxShardHeaderBytes)
            return std::nullopt;
        return parseCbor(header).at("g").get<std::string>();
    } catch (const std::exception &) {
        return std::nullopt;
    }
}

void EarlyMessages::add(const std::string &group, std::vector<zmq::message_t> frames, bool paced)
{
    std::size_t size = 0;
    for (const auto &f : frames)
        size += f.size();
    if (byGroup.size() >= PendingLimit || bytes + size > PendingBytes || group.size() > 64)
        return;
    bytes += size;
    byGroup.emplace(group, EarlyMessage{EarlyClock::now(), std::move(frames), size, paced});
}

void EarlyMessages::expire(EarlyClock::time_point now)
{
    std::erase_if(byGroup, [&](const auto &e) {
        const bool old = now - e.second.arrived > PendingAge;
        bytes -= old ? e.second.bytes : 0;
        return old;
    });
}

std::vector<EarlyMessage> EarlyMessages::take(const std::string &group, EarlyClock::time_point now)
{
    expire(now);
    std::vector<EarlyMessage> out;
    auto range = byGroup.equal_range(group);
    for (auto it = range.first; it != range.second; ++it) {
        bytes -= it->second.bytes;
        out.push_back(std::move(it->second));
    }
    byGroup.erase(range.first, range.second);
    return out;
}

RouterDrainer::RouterDrainer(zmq::socket_t *router, std::mutex &roundMutex, EarlyMessages &pending, DealerPool &pool)
    : m_router(router), m_roundMutex(roundMutex), m_pending(pending), m_pool(pool)
{
    m_thread = std::thread([this] {
        std::unique_lock lock(m_stopMutex);
        while (!m_stopSignal.wait_for(lock, DrainPeriod, [this] { return m_stopping; })) {
            lock.unlock();
            drainOnce();
            lock.lock();
        }
    });
}

RouterDrainer::~RouterDrainer()
{
    {
        std::lock_guard lock(m_stopMutex);
        m_stopping = true;
    }
    m_stopSignal.notify_all();
    m_thread.join();
}

void RouterDrainer::drainOnce()
{
    // Idle kept connections are the pool's alone, also while a round runs.
    if (const auto dropped = m_pool.drain(PoolClock::now(), DrainBudget))
        log::debug("allreduce", "dropped " + std::to_string(dropped) + " message(s) idle connections received");
    std::unique_lock round(m_roundMutex, std::try_to_lock);
    if (!round.owns_lock() || !m_router) // a round is running: it reads the ROUTER itself
        return;
    m_pending.expire(EarlyClock::now());
    for (int n = 0; n < DrainBudget; ++n) {
        std::vector<zmq::message_t> frames;
        try {
            if (!zmq::recv_multipart(*m_router, std::back_inserter(frames), zmq::recv_flags::dontwait))
                return;
        } catch (const zmq::error_t &e) {
            log::warning("allreduce", std::string("reading between rounds: ") + e.what());
            return;
        }
        if (const auto group = groupOf(frames))
            m_pending.add(*group, std::move(frames), false); // beyond the bounds: dropped
        else
            log::debug("allreduce", "dropped a malformed message between rounds");
    }
}

} // namespace dedloc::allreduce
