#include "averaging/ProgressExchange.h"

#include "net/WireMessage.h"
#include "util/Clock.h"
#include "util/Log.h"

#include <set>

namespace dedloc {

ProgressExchange::ProgressExchange(std::string swarmId, std::string selfId, int capacity)
    : m_swarmId(std::move(swarmId)), m_selfId(std::move(selfId)), m_layout(capacity)
{
}

bool ProgressExchange::publish(DhtNode &dht, ProgressRecord record, double ttl, double timeout)
{
    record.shardCount = m_layout.count();
    const auto payload = encodeProgress(record);
    bool confirmed = false, first = true;
    for (const auto &kind : m_layout.publishKinds(m_selfId, unixNow())) {
        const bool put = dht.publish(runKey(m_swarmId, kind), payload, ttl, timeout);
        confirmed = first ? put : confirmed;
        first = false;
    }
    return confirmed;
}

ProgressExchange::Read ProgressExchange::read(DhtNode &dht, double timeout) const
{
    Read r;
    const double now = unixNow();
    const auto tallies = m_layout.count() > 1 ? tallyKind(m_layout.count()) : std::string();
    for (const auto &kind : m_layout.readKinds(m_selfId, now)) {
        auto got = dht.fetch(runKey(m_swarmId, kind), timeout);
        auto &into = kind == tallies ? r.tallies : r.records;
        into.insert(into.end(), std::make_move_iterator(got.begin()), std::make_move_iterator(got.end()));
    }
    return r;
}

std::optional<ShardTally> ProgressExchange::ingest(const std::vector<ProgressRecord> &records,
                                                   const std::vector<SignedRecord> &tallies, ProgressTracker &tracker,
                                                   double now)
{
    const int k = m_layout.count(), own = shardOf(m_selfId, k);
    std::vector<ProgressRecord> elsewhere;
    for (const auto &r : records) {
        if (r.expiresAt > now)
            m_layout.saw(r.shardCount, now);
        if (shardOf(r.peerId, k) == own)
            tracker.update(r, now);
        else
            elsewhere.push_back(r);
    }
    const auto live = tracker.liveRecords(now);
    // Shards are uniform samples of the swarm, none much larger than this peer's: a tally counting
    // more than twice this shard (or than twice the capacity) is a lie about the swarm's size.
    const int mostPeers = 2 * std::max(static_cast<int>(live.size()), m_layout.capacity());
    std::vector<ShardTally> parsed;
    for (const auto &t : tallies) {
        try {
            auto tally = parseTally(t);
            if (tally.peers > mostPeers)
                throw ProtocolError("it counts " + std::to_string(tally.peers) + " peers in one shard, more than "
                                    + std::to_string(mostPeers));
            parsed.push_back(std::move(tally));
        } catch (const std::exception &e) {
            log::debug("swarm", "ignored a tally of " + t.peerId.substr(0, 8) + ": " + e.what());
        }
    }
    auto chosen = k > 1 ? chooseTallies(std::move(parsed), k, own, now) : std::vector<ShardTally>{};
    // Shards whose tally this turn did not bring (K changing): their records read here, if any.
    std::set<int> tallied;
    for (const auto &t : chosen)
        tallied.insert(t.shard);
    std::set<int> shards;
    for (const auto &r : elsewhere)
        shards.insert(shardOf(r.peerId, k));
    for (const int s : shards)
        if (!tallied.contains(s)) {
            auto t = tallyShard(elsewhere, k, s, now);
            t.expiresAt = now + 5.0;
            chosen.push_back(std::move(t));
        }
    m_estimate = m_layout.estimatedPeers(static_cast<int>(live.size()), chosen);
    tracker.setShardTallies(std::move(chosen));
    if (m_layout.update(m_estimate, now)) {
        const int next = m_layout.count(), mine = shardOf(m_selfId, next);
        log::info("swarm", "progress records in " + std::to_string(next) + " shard" + (next > 1 ? "s" : "")
                               + " (was " + std::to_string(k) + "; about " + std::to_string(m_estimate)
                               + " peers live): this peer's is shard " + std::to_string(mine));
        tracker.keepOnly([&](const std::string &id) { return shardOf(id, next) == mine; });
        tracker.setShardTallies({});
        return std::nullopt;
    }
    if (k > 1 && summarizes(m_selfId, live, k, now))
        return tallyShard(live, k, own, now);
    return std::nullopt;
}

bool ProgressExchange::publishTally(DhtNode &dht, const ShardTally &tally, double ttl, double timeout)
{
    return dht.publish(runKey(m_swarmId, tallyKind(tally.shardCount)), encodeTally(tally), ttl, timeout);
}

} // namespace dedloc
