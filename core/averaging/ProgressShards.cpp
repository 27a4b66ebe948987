#include "averaging/ProgressShards.h"

#include "net/WireMessage.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

namespace dedloc {

namespace {

using nlohmann::json;

bool powerOfTwo(long k) { return k >= 1 && k <= MaxShardCount && (k & (k - 1)) == 0; }

long supportOf(const ProgressRecord &r) { return std::max(r.epoch, r.followedEpoch); }

// Keeps the MaxTallyEpochs highest keys of `m`.
void keepHighest(std::map<long, int> &m)
{
    while (m.size() > MaxTallyEpochs)
        m.erase(m.begin());
}

long integer(const json &v, long max, const char *what)
{
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > max)
        throw ProtocolError(std::string("tally field ") + what + " is not an integer in 0.." + std::to_string(max));
    return static_cast<long>(v.get<long long>());
}

double amount(const json &v, const char *what)
{
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0.0)
        throw ProtocolError(std::string("tally field ") + what + " is not a finite non-negative number");
    return v.get<double>();
}

const json &member(const json &j, const char *key)
{
    const auto it = j.find(key);
    if (it == j.end())
        throw ProtocolError(std::string("tally without field ") + key);
    return *it;
}

// [[epoch, count], ...] with counts summing to at most `peers`.
std::map<long, int> epochCounts(const json &j, const char *key, int peers)
{
    const auto &a = member(j, key);
    if (!a.is_array() || a.size() > MaxTallyEpochs)
        throw ProtocolError(std::string("tally field ") + key + " is not a list of at most 8 epochs");
    std::map<long, int> out;
    long sum = 0;
    for (const auto &pair : a) {
        if (!pair.is_array() || pair.size() != 2)
            throw ProtocolError(std::string("tally field ") + key + " holds something else than [epoch, count]");
        const long count = integer(pair[1], peers, key);
        out[integer(pair[0], 1L << 40, key)] += static_cast<int>(count);
        sum += count;
    }
    if (sum > peers)
        throw ProtocolError(std::string("tally field ") + key + " counts more records than the tally's peers");
    return out;
}

} // namespace

int shardOf(const std::string &peerId, int shardCount)
{
    if (shardCount <= 1 || peerId.size() < 8)
        return 0;
    std::uint32_t v = 0;
    for (int i = 0; i < 8; ++i) {
        const char c = peerId[static_cast<std::size_t>(i)];
        const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (digit < 0)
            return 0;
        v = (v << 4) | static_cast<std::uint32_t>(digit);
    }
    return static_cast<int>(v % static_cast<std::uint32_t>(shardCount));
}

std::string shardKind(int shardCount, int shard)
{
    return shardCount <= 1 ? std::string("progress")
                           : "progress/" + std::to_string(shardCount) + "/" + std::to_string(shard);
}

std::string tallyKind(int shardCount) { return "progress/" + std::to_string(shardCount) + "/tallies"; }

int shardCountOf(const std::string &progressPayload)
{
    const auto j = json::parse(progressPayload, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("h") || !j["h"].is_number_integer())
        return 1;
    const auto k = j["h"].get<long long>();
    return powerOfTwo(static_cast<long>(std::clamp<long long>(k, 0, MaxShardCount + 1))) ? static_cast<int>(k) : 1;
}

ShardTally tallyShard(const std::vector<ProgressRecord> &records, int shardCount, int shard, double now, double fresh)
{
    ShardTally t;
    t.shardCount = shardCount;
    t.shard = shard;
    t.time = now;
    std::map<long, EpochCount> byEpoch;
    for (const auto &r : records) {
        if (r.expiresAt <= now || shardOf(r.peerId, shardCount) != shard || t.peers >= MaxTallyPeers)
            continue;
        ++t.peers;
        t.clients += r.clientMode ? 1 : 0;
        if (r.role == PeerRole::Monitor)
            t.monitors.push_back(r.peerId);
        const bool joins = r.averages && !r.paused && !r.syncing && now - r.time < fresh;
        t.helpers += r.role != PeerRole::Trainer && joins ? 1 : 0;
        ++t.support[supportOf(r)];
        if (!r.paused && r.role != PeerRole::Auxiliary)
            ++t.votes[supportOf(r)];
        auto &e = byEpoch[r.epoch];
        e.epoch = r.epoch;
        ++e.peers;
        e.trainers += r.role == PeerRole::Trainer ? 1 : 0;
        e.donors += !r.clientMode && r.role != PeerRole::Auxiliary ? 1 : 0;
        e.averaging += joins && r.role == PeerRole::Trainer ? 1 : 0;
        e.reported += static_cast<double>(r.samplesAccumulated);
        e.samples += static_cast<double>(r.samplesAccumulated) + r.samplesPerSecond * std::max(0.0, now - r.time);
        e.rate += r.samplesPerSecond;
    }
    keepHighest(t.support);
    keepHighest(t.votes);
    std::sort(t.monitors.begin(), t.monitors.end());
    t.monitors.resize(std::min(t.monitors.size(), MaxTallyMonitors));
    for (auto it = byEpoch.rbegin(); it != byEpoch.rend() && t.epochs.size() < MaxTallyEpochs; ++it)
        t.epochs.push_back(it->second);
    return t;
}

std::string encodeTally(const ShardTally &t)
{
    auto pairs = [](const std::map<long, int> &m) {
        json a = json::array();
        for (const auto &[epoch, n] : m)
            a.push_back({epoch, n});
        return a;
    };
    json epochs = json::array();
    for (const auto &e : t.epochs)
        epochs.push_back({e.epoch, e.peers, e.trainers, e.donors, e.averaging, e.reported, e.samples, e.rate});
    json j{{"K", t.shardCount}, {"s", t.shard},          {"p", t.peers},         {"c", t.clients},
           {"x", t.helpers},    {"su", pairs(t.support)}, {"v", pairs(t.votes)}, {"ep", epochs}};
    if (!t.monitors.empty())
        j["m"] = t.monitors;
    return j.dump();
}

ShardTally parseTally(const SignedRecord &record)
{
    const auto j = json::parse(record.payload, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        throw ProtocolError("tally payload is not a JSON object");
    ShardTally t;
    t.summarizer = record.peerId;
    t.time = record.time;
    t.expiresAt = record.expiresAt;
    if (!std::isfinite(t.time) || !std::isfinite(t.expiresAt))
        throw ProtocolError("tally made or expiring at a time that is not finite");
    const long k = integer(member(j, "K"), MaxShardCount, "K");
    if (!powerOfTwo(k) || k < 2)
        throw ProtocolError("tally of " + std::to_string(k) + " shards: not a power of two in 2..1024");
    t.shardCount = static_cast<int>(k);
    t.shard = static_cast<int>(integer(member(j, "s"), k - 1, "s"));
    t.peers = static_cast<int>(integer(member(j, "p"), MaxTallyPeers, "p"));
    t.clients = static_cast<int>(integer(member(j, "c"), t.peers, "c"));
    t.helpers = static_cast<int>(integer(member(j, "x"), t.peers, "x"));
    t.support = epochCounts(j, "su", t.peers);
    t.votes = epochCounts(j, "v", t.peers);
    const auto &epochs = member(j, "ep");
    if (!epochs.is_array() || epochs.size() > MaxTallyEpochs)
        throw ProtocolError("tally field ep is not a list of at most 8 epochs");
    long peers = 0;
    for (const auto &a : epochs) {
        if (!a.is_array() || a.size() != 8)
            throw ProtocolError("tally epoch entry is not a list of 8 numbers");
        EpochCount e;
        e.epoch = integer(a[0], 1L << 40, "ep epoch");
        e.peers = static_cast<int>(integer(a[1], t.peers, "ep peers"));
        e.trainers = static_cast<int>(integer(a[2], e.peers, "ep trainers"));
        e.donors = static_cast<int>(integer(a[3], e.peers, "ep donors"));
        e.averaging = static_cast<int>(integer(a[4], e.trainers, "ep averaging"));
        e.reported = amount(a[5], "ep reported");
        e.samples = amount(a[6], "ep samples");
        e.rate = amount(a[7], "ep rate");
        peers += e.peers;
        t.epochs.push_back(e);
    }
    if (peers > t.peers)
        throw ProtocolError("tally epochs count more records than the tally's peers");
    if (j.contains("m")) {
        const auto &m = j["m"];
        if (!m.is_array() || m.size() > MaxTallyMonitors)
            throw ProtocolError("tally field m is not a list of at most 4 monitor ids");
        for (const auto &id : m) {
            if (!id.is_string() || id.get<std::string>().empty() || id.get<std::string>().size() > 64)
                throw ProtocolError("tally field m holds something else than a peer id");
            if (shardOf(id.get<std::string>(), t.shardCount) != t.shard)
                throw ProtocolError("tally names a monitor of another shard");
            t.monitors.push_back(id.get<std::string>());
        }
    }
    return t;
}

std::vector<ShardTally> chooseTallies(std::vector<ShardTally> tallies, int shardCount, int ownShard, double now)
{
    // The newest tally per summarizer, by shard.
    std::sort(tallies.begin(), tallies.end(), [](const ShardTally &a, const ShardTally &b) { return a.time > b.time; });
    std::map<int, std::vector<ShardTally>> byShard;
    std::set<std::string> seen;
    for (auto &t : tallies)
        if (t.shardCount == shardCount && t.shard != ownShard && t.expiresAt > now
            && shardOf(t.summarizer, shardCount) == t.shard && seen.insert(t.summarizer).second)
            byShard[t.shard].push_back(std::move(t));
    std::vector<ShardTally> out;
    for (auto &[shard, list] : byShard) {
        // The shard's own summarizers: its SummarizersPerShard smallest ids among the signers.
        std::sort(list.begin(), list.end(),
                  [](const ShardTally &a, const ShardTally &b) { return a.summarizer < b.summarizer; });
        list.resize(std::min<std::size_t>(list.size(), SummarizersPerShard));
        // The median peer count, ties to the smaller claim of samples.
        auto claim = [](const ShardTally &t) {
            double samples = 0.0;
            for (const auto &e : t.epochs)
                samples += e.samples;
            return std::pair(t.peers, samples);
        };
        std::sort(list.begin(), list.end(), [&](const ShardTally &a, const ShardTally &b) { return claim(a) < claim(b); });
        out.push_back(std::move(list[(list.size() - 1) / 2]));
    }
    return out;
}

bool summarizes(const std::string &self, const std::vector<ProgressRecord> &records, int shardCount, double now)
{
    const int own = shardOf(self, shardCount);
    std::vector<std::string> ids{self};
    for (const auto &r : records)
        if (r.peerId != self && r.expiresAt > now && !r.paused && shardOf(r.peerId, shardCount) == own)
            ids.push_back(r.peerId);
    const auto cut = ids.begin() + std::min<std::ptrdiff_t>(SummarizersPerShard, static_cast<std::ptrdiff_t>(ids.size()));
    std::partial_sort(ids.begin(), cut, ids.end());
    return std::find(ids.begin(), cut, self) != cut;
}

ShardLayout::ShardLayout(int capacity) : m_capacity(std::max(1, capacity)) {}

void ShardLayout::saw(int shardCount, double now)
{
    if (powerOfTwo(shardCount))
        m_seen[shardCount] = now;
}

int ShardLayout::estimatedPeers(int ownShardLive, const std::vector<ShardTally> &chosen) const
{
    long n = ownShardLive;
    int tallied = 0;
    for (const auto &t : chosen)
        if (t.shardCount == m_count) {
            n += std::min(t.peers, 4 * m_capacity);
            ++tallied;
        }
    n += static_cast<long>(std::max(0, m_count - 1 - tallied)) * ownShardLive;
    return static_cast<int>(std::min<long>(n, 1L << 30));
}

int ShardLayout::estimatedFromTallies(const std::vector<ShardTally> &tallies, double now) const
{
    // The K above this peer's with live tallies, largest first; the first with tallies of half
    // its shards at least (a few forged ones claim no swarm of thousands, nor hide a true K).
    std::set<int, std::greater<>> larger;
    for (const auto &t : tallies)
        if (t.expiresAt > now && t.shardCount > m_count)
            larger.insert(t.shardCount);
    for (const int k : larger) {
        const auto chosen = chooseTallies(tallies, k, -1, now);
        if (chosen.empty() || 2 * static_cast<long>(chosen.size()) < k)
            continue;
        long n = 0;
        for (const auto &t : chosen)
            n += std::min(t.peers, 2 * m_capacity);
        // Shards without a tally read count as the mean of those with one.
        return static_cast<int>(n * k / static_cast<long>(chosen.size()));
    }
    return 0;
}

bool ShardLayout::update(int estimatedPeers, double now)
{
    const long n = estimatedPeers;
    int next = m_count;
    if (n > static_cast<long>(m_capacity) * m_count)
        while (next < MaxShardCount && n > static_cast<long>(m_capacity) * next)
            next *= 2;
    else if (m_count > 1 && 4 * n < static_cast<long>(m_capacity) * m_count)
        next = m_count / 2;
    if (next < m_count) {
        m_leftCount = m_count;
        m_leftAt = now;
    }
    // Another peer's larger K, unless this peer left it itself a moment ago (the others follow),
    // or this estimate would halve it again (one record claiming 1 024 shards moves nobody).
    const bool leftLately = now - m_leftAt <= 2 * ShardChangeSeconds;
    for (const auto &[k, at] : m_seen)
        if (k > next && now - at <= ShardChangeSeconds && !(leftLately && k <= m_leftCount)
            && 4 * n >= static_cast<long>(m_capacity) * k)
            next = k;
    std::erase_if(m_seen, [now](const auto &e) { return now - e.second > ShardChangeSeconds; });
    if (next == m_count)
        return false;
    m_previous = m_count;
    m_count = next;
    m_changedAt = now;
    return true;
}

int ShardLayout::previousCount(double now) const
{
    return m_previous != m_count && now - m_changedAt <= ShardChangeSeconds ? m_previous : 0;
}

std::vector<std::string> ShardLayout::publishKinds(const std::string &self, double now) const
{
    std::vector<std::string> kinds{shardKind(m_count, shardOf(self, m_count))};
    if (m_previous != m_count && now - m_changedAt <= ShardChangeSeconds)
        kinds.push_back(shardKind(m_previous, shardOf(self, m_previous)));
    return kinds;
}

std::vector<std::string> ShardLayout::readKinds(const std::string &self, double now) const
{
    const int own = shardOf(self, m_count);
    std::vector<std::string> kinds{shardKind(m_count, own)};
    // A smaller K only while this peer leaves it (records there linger for their lifetime: read
    // for them, they would keep the old key read for good); a larger one while peers use it.
    std::set<int> others;
    for (const auto &[k, at] : m_seen)
        if (k > m_count && now - at <= ShardChangeSeconds)
            others.insert(k);
    if (m_previous != m_count && now - m_changedAt <= ShardChangeSeconds)
        others.insert(m_previous);
    for (const int k : others) {
        if (k < m_count) {
            kinds.push_back(shardKind(k, shardOf(self, k)));
        } else if (k / m_count <= 8) {
            // The shards at k that split this peer's: those equal to it modulo K.
            for (int s = own; s < k; s += m_count)
                kinds.push_back(shardKind(k, s));
        }
    }
    if (m_count > 1)
        kinds.push_back(tallyKind(m_count));
    // While this peer grows K, the shards whose peers have not moved yet are counted at the K before.
    if (m_previous > 1 && m_previous < m_count && now - m_changedAt <= ShardChangeSeconds)
        kinds.push_back(tallyKind(m_previous));
    return kinds;
}

} // namespace dedloc
