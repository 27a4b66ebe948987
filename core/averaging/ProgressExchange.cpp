#include "averaging/ProgressExchange.h"

#include "net/WireMessage.h"
#include "util/Clock.h"
#include "util/Log.h"

#include <algorithm>
#include <set>

namespace dedloc {

ProgressExchange::ProgressExchange(std::string swarmId, std::string selfId, int capacity, double fresh)
    : m_swarmId(std::move(swarmId)), m_selfId(std::move(selfId)), m_layout(capacity), m_fresh(fresh)
{
}

bool ProgressExchange::publish(DhtNode &dht, ProgressRecord record, double ttl, double timeout)
{
    record.shardCount = m_layout.count();
    const auto payload = encodeProgress(record);
    auto kinds = m_layout.publishKinds(m_selfId, unixNow());
    const auto root = shardKind(1, 0);
    if (m_summarizes && m_layout.count() > 1 && shardOf(m_selfId, m_layout.count()) == 0
        && std::find(kinds.begin(), kinds.end(), root) == kinds.end())
        kinds.push_back(root);
    bool confirmed = false, first = true;
    for (const auto &kind : kinds) {
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
    std::set<int> larger; // the K above this peer's that records read carry (at most 10)
    for (const auto &kind : m_layout.readKinds(m_selfId, now)) {
        auto got = dht.fetch(runKey(m_swarmId, kind), timeout);
        const bool tallies = kind.ends_with("/tallies");
        if (!tallies)
            for (const auto &record : got)
                if (const int k = shardCountOf(record.payload); k > m_layout.count())
                    larger.insert(k);
        auto &into = tallies ? r.tallies : r.records;
        into.insert(into.end(), std::make_move_iterator(got.begin()), std::make_move_iterator(got.end()));
    }
    // A joiner (or a peer left behind by a change) that sees a larger K reads its tallies at once:
    // the swarm's size, by which it takes that K (ShardLayout::estimatedFromTallies).
    for (const int k : larger) {
        auto got = dht.fetch(runKey(m_swarmId, tallyKind(k)), timeout);
        r.tallies.insert(r.tallies.end(), std::make_move_iterator(got.begin()), std::make_move_iterator(got.end()));
    }
    return r;
}

std::optional<ShardTally> ProgressExchange::ingest(const std::vector<ProgressRecord> &records,
                                                   const std::vector<SignedRecord> &tallies, ProgressTracker &tracker,
                                                   double now, const std::function<bool(const std::string &)> &refused)
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
    const auto parsed = parseTallies(tallies, static_cast<int>(live.size()), now, refused);
    const int elsewhereEstimate = m_layout.estimatedFromTallies(parsed, now);
    auto chosen = k > 1 ? chooseTallies(parsed, k, own, now) : std::vector<ShardTally>{};
    // A shard whose tally this read missed (a fetch answered in part) keeps the last one until it
    // expires; one never read is tallied from its records read here, if any (K changing).
    std::set<int> tallied;
    for (const auto &t : chosen)
        tallied.insert(t.shard);
    for (const auto &[shard, t] : m_held)
        if (!tallied.contains(shard) && t.expiresAt > now && t.shardCount == k && !(refused && refused(t.summarizer))) {
            chosen.push_back(t);
            tallied.insert(shard);
        }
    m_held.clear();
    for (const auto &t : chosen)
        m_held[t.shard] = t;
    std::set<int> shards;
    for (const auto &r : elsewhere)
        shards.insert(shardOf(r.peerId, k));
    for (const int s : shards)
        if (!tallied.contains(s)) {
            auto t = tallyShard(elsewhere, k, s, now, m_fresh);
            t.expiresAt = now + 5.0;
            chosen.push_back(std::move(t));
            tallied.insert(s);
        }
    m_estimate = std::max(m_layout.estimatedPeers(static_cast<int>(live.size()), chosen), elsewhereEstimate);
    for (auto &t : notMovedYet(parsed, tallied, now))
        chosen.push_back(std::move(t));
    if (m_layout.update(m_estimate, now)) {
        changed(k, live, std::move(chosen), tracker, now);
        return std::nullopt;
    }
    tracker.setShardTallies(std::move(chosen));
    m_summarizes = k > 1 && summarizes(m_selfId, live, k, now);
    if (m_summarizes)
        return tallyShard(live, k, own, now, m_fresh);
    return std::nullopt;
}

std::vector<ShardTally> ProgressExchange::parseTallies(const std::vector<SignedRecord> &tallies, int ownShardLive,
                                                     double now, const std::function<bool(const std::string &)> &refused)
{
    // Shards are uniform samples of the swarm, none much larger than this peer's (a joiner's is
    // still empty) or than the capacity: a tally counting more than twice both lies about its
    // size. A shard of a smaller K (read while this peer grows K) holds K / its K times as many.
    const int mostPeers = 2 * std::max(ownShardLive, m_layout.capacity());
    std::vector<ShardTally> parsed;
    for (const auto &t : tallies) {
        if (refused && refused(t.peerId))
            continue;
        try {
            auto tally = parseTally(t);
            const int most = mostPeers * std::max(1, m_layout.count() / tally.shardCount);
            if (tally.peers > most)
                throw ProtocolError("it counts " + std::to_string(tally.peers) + " peers in one shard of "
                                    + std::to_string(tally.shardCount) + ", more than " + std::to_string(most));
            if (tally.expiresAt > now)
                m_layout.saw(tally.shardCount, now);
            parsed.push_back(std::move(tally));
        } catch (const std::exception &e) {
            log::debug("swarm", "ignored a tally of " + t.peerId.substr(0, 8) + ": " + e.what());
        }
    }
    return parsed;
}

void ProgressExchange::changed(int before, const std::vector<ProgressRecord> &live, std::vector<ShardTally> others,
                               ProgressTracker &tracker, double now)
{
    const int next = m_layout.count(), mine = shardOf(m_selfId, next), own = shardOf(m_selfId, before);
    log::info("swarm", "progress records in " + std::to_string(next) + " shard" + (next > 1 ? "s" : "") + " (was "
                           + std::to_string(before) + "; about " + std::to_string(m_estimate)
                           + " peers live): this peer's is shard " + std::to_string(mine));
    // Until the next read the others count as this peer counted them: the other shards by their
    // tallies at the K before, the records it lets go (a growth) as their new shard's tally.
    for (int s = own; next > before && s < next; s += before)
        if (s != mine) {
            auto t = tallyShard(live, next, s, now, m_fresh);
            t.expiresAt = now + 5.0;
            others.push_back(std::move(t));
        }
    tracker.keepOnly([&](const std::string &id) { return shardOf(id, next) == mine; });
    tracker.setShardTallies(std::move(others));
    m_held.clear();
    m_summarizes = false;
}

std::vector<ShardTally> ProgressExchange::notMovedYet(const std::vector<ShardTally> &parsed, const std::set<int> &tallied,
                                                    double now) const
{
    const int before = m_layout.previousCount(now), k = m_layout.count();
    std::vector<ShardTally> out;
    if (before <= 1 || before >= k)
        return out;
    // A shard of the K before, other than this peer's (whose records it reads), none of whose
    // parts at K has a tally: its peers have not moved, and their last tally there counts them.
    for (auto &t : chooseTallies(parsed, before, shardOf(m_selfId, before), now)) {
        bool moved = false;
        for (int s = t.shard; s < k; s += before)
            moved = moved || tallied.contains(s);
        if (!moved)
            out.push_back(std::move(t));
    }
    return out;
}

bool ProgressExchange::publishTally(DhtNode &dht, const ShardTally &tally, double ttl, double timeout)
{
    // Just after a growth, under the smaller K's tallies too: every shard there hears of it.
    if (const int before = m_layout.previousCount(unixNow()); before > 1 && before < tally.shardCount)
        (void)dht.publish(runKey(m_swarmId, tallyKind(before)), encodeTally(tally), ttl, timeout);
    return dht.publish(runKey(m_swarmId, tallyKind(tally.shardCount)), encodeTally(tally), ttl, timeout);
}

} // namespace dedloc
