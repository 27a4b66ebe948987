#include "SimSwarm.h"

#include "util/Clock.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <thread>

namespace dedloc::sim {

SimSwarm::SimSwarm(SimSwarmConfig config) : m_config(std::move(config)), m_random(m_config.seed) {}

SimSwarm::~SimSwarm() { stop(); }

SimSwarm::Member SimSwarm::make()
{
    SimPeerConfig c = m_config.peer;
    std::lognormal_distribution<double> speed(0.0, m_config.speedSpread);
    c.samplesPerSecond = m_config.peer.samplesPerSecond * speed(m_random);
    c.seed = m_config.seed * 1000003ULL + m_nextSeed++;
    if (!m_live.empty())
        c.bootstrap = "127.0.0.1:" + std::to_string(m_live.front().peer->dhtPort());
    ++m_joins;
    // Its DHT node's sockets take low descriptors however many the other peers hold open (the
    // node makes them on this thread), those of peers that left first.
    m_low.refill();
    const LowDescriptors::Claim claim(m_low);
    return {std::make_unique<SimPeer>(c), unixNow(), 0.0};
}

void SimSwarm::join()
{
    auto m = make();
    m.peer->start();
    m_live.push_back(std::move(m));
}

void SimSwarm::leaveOne()
{
    if (m_live.size() < 2)
        return;
    std::uniform_int_distribution<std::size_t> pick(0, m_live.size() - 1);
    auto it = m_live.begin() + static_cast<long>(pick(m_random));
    it->peer->stop();
    it->leftAt = unixNow();
    m_departed.push_back(std::move(*it));
    m_live.erase(it);
}

void SimSwarm::start(double stagger)
{
    // Every DHT node first (low file descriptors: SimPeer.h), then the peers' other sockets.
    while (m_live.size() < m_config.peers)
        m_live.push_back(make());
    for (auto &m : m_live) {
        m.peer->start();
        m.joinedAt = unixNow();
        std::this_thread::sleep_for(std::chrono::duration<double>(stagger));
    }
}

void SimSwarm::run(double seconds, const std::function<void()> &everySecond)
{
    const double end = unixNow() + seconds;
    const double perSecond = m_config.churnPerMinute * static_cast<double>(m_config.peers) / 60.0;
    if (m_nextChurn == 0.0 && perSecond > 0) // the churn's clock runs on across calls
        m_nextChurn = unixNow() + 1.0 / perSecond;
    double nextSample = unixNow() + 1.0;
    while (unixNow() < end) {
        if (perSecond > 0 && unixNow() >= m_nextChurn) {
            leaveOne();
            join();
            m_nextChurn += 1.0 / perSecond;
        }
        if (everySecond && unixNow() >= nextSample) {
            everySecond();
            nextSample += 1.0;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

bool SimSwarm::runUntilEpoch(long epoch, double share, double minSeconds, double maxSeconds)
{
    const auto reached = [&] {
        std::size_t at = 0;
        for (const auto &m : m_live)
            at += m.peer->epoch() >= epoch ? 1 : 0;
        return static_cast<double>(at) >= share * static_cast<double>(m_live.size());
    };
    run(minSeconds);
    for (double spent = minSeconds; !reached(); spent += 1.0) {
        if (spent >= maxSeconds)
            return false;
        run(1.0);
    }
    return true;
}

void SimSwarm::stop()
{
    m_stopBegan = unixNow();
    for (auto &m : m_live) // all at once: each one's waits end together, not one after another
        m.peer->requestStop();
    for (auto &m : m_live) {
        m.peer->stop();
        m.leftAt = unixNow();
    }
    for (auto &m : m_live)
        m_departed.push_back(std::move(m));
    m_live.clear();
}

SimPeer::ProgressReads SimSwarm::progressReadTotals() const
{
    SimPeer::ProgressReads total;
    for (const auto *list : {&m_live, &m_departed})
        for (const auto &m : *list) {
            const auto reads = m.peer->progressReads();
            total.turns += reads.turns;
            total.records += reads.records;
            total.bytes += reads.bytes;
            total.shardCount = std::max(total.shardCount, reads.shardCount);
        }
    return total;
}

std::vector<SimPeer::ProgressReads> SimSwarm::liveProgressReads() const
{
    std::vector<SimPeer::ProgressReads> out;
    for (const auto &m : m_live)
        out.push_back(m.peer->progressReads());
    return out;
}

SimReport SimSwarm::report() const
{
    SimReport r;
    r.joins = m_joins;
    r.leaves = m_departed.size();
    std::map<long, std::set<std::string>> digests;
    std::map<long, std::map<std::string, std::size_t>> starts;
    std::map<long, std::pair<double, double>> times; // first decision, last application
    double peerSeconds = 0.0, bytes = 0.0;
    for (const auto *list : {&m_live, &m_departed})
        for (const auto &m : *list) {
            const double left = m.leftAt > 0 ? m.leftAt : unixNow();
            peerSeconds += left - m.joinedAt;
            const auto t = m.peer->dhtTraffic();
            bytes += static_cast<double>(t.put + t.got);
            r.shardCount = std::max(r.shardCount, m.peer->progressReads().shardCount);
            r.stateDownloads += m.peer->stateDownloads();
            for (const auto &s : m.peer->steps()) {
                auto &e = r.epochs[s.epoch];
                if (s.leaving) {
                    ++e.leaving;
                    continue;
                }
                ++e.stepped;
                e.alone += s.groupSize <= 1 && !s.adopted ? 1 : 0;
                e.adopted += s.adopted ? 1 : 0;
                e.merged += s.mergedGroups > 1 ? 1 : 0;
                e.afterStop += afterStop(s) ? 1 : 0;
                digests[s.epoch].insert(s.paramsDigest);
                ++starts[s.epoch][s.startDigest];
                auto [it, fresh] = times.try_emplace(s.epoch, s.decidedAt, s.appliedAt);
                if (!fresh)
                    it->second = {std::min(it->second.first, s.decidedAt), std::max(it->second.second, s.appliedAt)};
            }
        }
    for (auto &[epoch, e] : r.epochs) {
        e.digests = digests[epoch].size();
        e.starts = starts[epoch].size();
        for (const auto &[digest, count] : starts[epoch])
            e.fromCommonStart = std::max(e.fromCommonStart, count);
        e.triggerToAll = times[epoch].second - times[epoch].first;
    }
    r.recordBytesPerPeerSecond = peerSeconds > 0 ? bytes / peerSeconds : 0.0;
    describeStrays(r);
    return r;
}

// SimEpoch::strays of every epoch in `r`.
void SimSwarm::describeStrays(SimReport &r) const
{
    std::map<long, std::map<std::string, std::size_t>> after, before;
    std::vector<std::pair<std::string, SimStep>> steps;
    for (const auto *list : {&m_live, &m_departed})
        for (const auto &m : *list)
            for (const auto &s : m.peer->steps()) {
                if (s.leaving)
                    continue;
                ++after[s.epoch][s.paramsDigest];
                ++before[s.epoch][s.startDigest];
                steps.emplace_back(m.peer->peerId(), s);
            }
    const auto commonest = [](const std::map<std::string, std::size_t> &counts) {
        return std::max_element(counts.begin(), counts.end(), [](const auto &a, const auto &b) { return a.second < b.second; })
            ->first;
    };
    for (const auto &[peer, s] : steps) {
        if (s.paramsDigest == commonest(after[s.epoch]))
            continue;
        std::string d = peer.substr(0, 8);
        d += " group ";
        d += std::to_string(s.groupSize);
        d += " merged ";
        d += std::to_string(s.mergedGroups);
        if (s.adopted)
            d += " took the merge";
        if (!s.complete)
            d += " incomplete";
        if (s.startDigest != commonest(before[s.epoch]))
            d += " other start";
        if (afterStop(s))
            d += " after the stop";
        r.epochs[s.epoch].strays.push_back(std::move(d));
    }
}

} // namespace dedloc::sim
