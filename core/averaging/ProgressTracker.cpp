#include "averaging/ProgressTracker.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

namespace dedloc {

ProgressTracker::ProgressTracker(TrackerOptions options)
    : m_options(options), m_clock(options.delayedUpdates, options.allowedClockSkew)
{
}

// An honest peer stops computing at twice the target batch, and no device computes a million
// samples a second: claims beyond either only serve to trigger steps on small batches.
std::string impossibleClaim(const ProgressRecord &r, long targetBatchSize)
{
    if (r.samplesAccumulated > maxSamplesPerEpoch(targetBatchSize))
        return "claims " + std::to_string(r.samplesAccumulated) + " samples at epoch " + std::to_string(r.epoch)
               + ", more than " + std::to_string(maxSamplesPerEpoch(targetBatchSize)) + " (twice the target batch)";
    if (r.samplesPerSecond > MaxSamplesPerSecond)
        return "claims " + std::to_string(r.samplesPerSecond) + " samples/s";
    return {};
}

bool ProgressTracker::update(const ProgressRecord &r, double now)
{
    if (r.peerId.empty() || r.epoch < 0 || r.samplesAccumulated < 0 || !std::isfinite(r.samplesPerSecond)
        || r.samplesPerSecond < 0 || !std::isfinite(r.time) || !std::isfinite(r.expiresAt))
        return false;
    if (!impossibleClaim(r, m_options.targetBatchSize).empty())
        return false;
    if (r.expiresAt <= now || r.time > now + m_options.allowedClockSkew)
        return false;
    auto it = m_records.find(r.peerId);
    if (it != m_records.end() && it->second.time >= r.time)
        return false; // an older (or the same) copy coming back from another DHT node
    // This peer's own step ended (a single epoch on; a jump did not see the epoch begin).
    if (r.peerId == m_options.selfId && it != m_records.end() && r.epoch == it->second.epoch + 1)
        m_clock.ownStepEnded(r.epoch, now);
    m_records[r.peerId] = r;
    if (r.peerId != m_options.selfId)
        m_clock.sawForeignRecord(now);
    // Peers whose records expired are forgotten (at most once a second): a swarm with churn would
    // otherwise keep every peer it ever saw. An older copy of a forgotten record has expired too,
    // so it cannot come back.
    if (now - m_lastPrune >= 1.0) {
        std::erase_if(m_records, [now](const auto &entry) { return entry.second.expiresAt <= now; });
        m_lastPrune = now;
    }
    return true;
}

void ProgressTracker::remove(const std::string &peerId) { m_records.erase(peerId); }

void ProgressTracker::keepOnly(const std::function<bool(const std::string &)> &keep)
{
    std::erase_if(m_records, [&](const auto &e) { return e.first != m_options.selfId && !keep(e.first); });
}

std::size_t ProgressTracker::expectedElsewhere(long epoch, long lag, double now) const
{
    std::size_t n = 0;
    for (const auto &t : m_tallies) {
        if (t.expiresAt <= now)
            continue;
        n += static_cast<std::size_t>(t.helpers);
        for (const auto &c : t.epochs)
            if (c.epoch <= epoch && c.epoch >= epoch - lag)
                n += static_cast<std::size_t>(c.averaging);
    }
    return n;
}

namespace {

// The epoch a record vouches for: its own, or the one its monitor follows.
long supportOf(const ProgressRecord &r) { return std::max(r.epoch, r.followedEpoch); }

} // namespace

void ProgressTracker::EpochSupport::add(long epoch, int holders)
{
    if (holders <= 0)
        return;
    if (epoch > top) {
        second = top;
        top = epoch;
        topHolders = holders;
    } else if (epoch == top) {
        topHolders += holders;
    } else {
        second = std::max(second, epoch);
    }
}

long ProgressTracker::EpochSupport::held() const
{
    if (votes.empty())
        return std::numeric_limits<long>::max();
    // The upper median: with the votes in descending order, the one at (n - 1) / 2 is reached by
    // (n + 1) / 2 of them, at least half; the next one down would be reached by more, not higher.
    auto sorted = votes;
    const auto at = sorted.begin() + static_cast<std::ptrdiff_t>((sorted.size() - 1) / 2);
    std::nth_element(sorted.begin(), at, sorted.end(), std::greater<>());
    return *at;
}

ProgressTracker::EpochSupport ProgressTracker::epochSupport(double now, bool vouched, long selfVote) const
{
    EpochSupport e;
    if (selfVote != NotTraining)
        e.votes.push_back(selfVote);
    for (const auto &[id, r] : m_records) {
        if (r.expiresAt <= now || (!vouched && id == m_options.selfId))
            continue;
        ++e.live;
        e.selfLive = e.selfLive || id == m_options.selfId;
        const long supported = vouched ? supportOf(r) : r.epoch;
        e.add(supported);
        // A trainer's own vote is its local epoch (above), not its last record's; follow() counts
        // the trainers' votes alone. A paused peer stays at the epoch it paused at, however far
        // the swarm moves on: no vote. A syncing one votes: strangers who send honest peers
        // after their epoch must not thereby silence them.
        const bool votes = vouched ? r.role != PeerRole::Auxiliary : r.role == PeerRole::Trainer;
        if (id != m_options.selfId && !r.paused && votes)
            e.votes.push_back(supported);
    }
    // Other shards' records, counted by their summarizers (follow() sees the trainers' own epochs
    // in this shard's records alone).
    for (const auto &t : vouched ? m_tallies : std::vector<ShardTally>{}) {
        if (t.expiresAt <= now)
            continue;
        e.live += t.peers;
        for (const auto &[epoch, n] : t.support)
            e.add(epoch, n);
        for (const auto &[epoch, n] : t.votes)
            e.votes.insert(e.votes.end(), static_cast<std::size_t>(n), epoch);
    }
    return e;
}

bool ProgressTracker::EpochSupport::withinOne(const ProgressRecord &c) const
{
    const long highestOfTheRest = supportOf(c) == top && topHolders == 1 ? second : top;
    return c.epoch <= highestOfTheRest + 1;
}

bool ProgressTracker::EpochSupport::withinOne(long epoch, int holders) const
{
    const long highestOfTheRest = epoch == top && topHolders <= holders ? second : top;
    return epoch <= highestOfTheRest + 1;
}

bool ProgressTracker::EpochSupport::corroborates(const ProgressRecord &c, const std::string &selfId) const
{
    const int others = live - 1 - (selfLive && c.peerId != selfId ? 1 : 0); // besides c and this peer
    return others == 0 || withinOne(c);
}

long ProgressTracker::follow(double now)
{
    // The others' own epochs only: followed epochs vouching for each other (this peer's included)
    // would let a stranger climb them one read at a time.
    const auto support = epochSupport(now, false);
    const long held = support.held();
    int trainers = 0;
    for (const auto &[id, r] : m_records)
        trainers += r.expiresAt > now && id != m_options.selfId && r.role == PeerRole::Trainer ? 1 : 0;
    // Steps this tracker may have missed between two reads: one a second since the last advance.
    const long budget = m_followed < 0 ? 0 : 1 + static_cast<long>(std::clamp(now - m_followedAt, 0.0, 1e6));
    // At most one epoch above a state that another peer claims to hold (none claimed: no bound),
    // so that strangers cannot climb it while they hold the vote.
    long claimed = -1;
    for (const auto &[id, r] : m_records)
        if (r.expiresAt > now && id != m_options.selfId && !r.stateDigest.empty())
            claimed = std::max(claimed, r.stateEpoch);
    const long most = claimed < 0 ? std::numeric_limits<long>::max() : claimed + 1;
    long followed = -1;
    for (const auto &[id, r] : m_records)
        if (r.expiresAt > now && id != m_options.selfId && r.role == PeerRole::Trainer && r.epoch <= most
            && ((support.withinOne(r) && r.epoch <= held) || (trainers == 1 && r.epoch <= m_followed + budget)))
            followed = std::max(followed, r.epoch);
    if (followed > m_followed) {
        m_followed = followed;
        m_followedAt = now;
        return m_followed;
    }
    // Taken on too few records (a stranger one epoch ahead beside the first honest trainer wins
    // the tie): when no other peer claims a state at this epoch or above, and more of the votes
    // stand one epoch below it than at it or above, it gives way by one epoch.
    const auto count = [&](auto pred) { return std::count_if(support.votes.begin(), support.votes.end(), pred); };
    if (m_followed > 0 && claimed < m_followed
        && count([&](long v) { return v == m_followed - 1; }) > count([&](long v) { return v >= m_followed; })) {
        --m_followed;
        m_followedAt = now;
    }
    return m_followed;
}

GlobalProgress ProgressTracker::global(double now, long localEpoch) const
{
    GlobalProgress g;
    const auto support = epochSupport(now, true, localEpoch);
    const long held = support.held();
    long donorsMax = std::max(0L, localEpoch), trainersMax = 0;
    for (const auto &[id, r] : m_records) {
        if (r.expiresAt <= now)
            continue;
        ++g.peers;
        g.clientPeers += r.clientMode ? 1 : 0;
        const bool trainer = r.role == PeerRole::Trainer, donor = !r.clientMode && r.role != PeerRole::Auxiliary;
        if (id == m_options.selfId || !(localEpoch == NotTraining ? trainer : donor)
            || !support.corroborates(r, m_options.selfId))
            continue;
        // A peer that does not train follows the trainers as far as the swarm holds their epoch
        // (monitors still at the one before outvote two trainers that stepped); a trainer
        // resyncs only to a held epoch that a donor serves.
        trainersMax = std::max(trainersMax, trainer ? std::min(r.epoch, held) : 0L);
        if (r.epoch <= held)
            donorsMax = std::max(donorsMax, donor ? r.epoch : 0L);
    }
    tallyEpochs(support, held, donorsMax, trainersMax, g, now);
    g.globalEpoch = localEpoch == NotTraining ? trainersMax : donorsMax;
    m_clock.sawGlobal(g.globalEpoch, now);
    const double cap = rateCap(g.globalEpoch, now);
    const double most = allowance(g.globalEpoch, cap, now, m_options.beginningSlack);
    double reported = 0.0;
    for (const auto &[id, r] : m_records) {
        if (r.expiresAt <= now || r.epoch != g.globalEpoch)
            continue;
        const auto c = counted(r, cap, most, now);
        reported += c.reported;
        g.samplesAccumulated += c.extrapolated;
        g.samplesPerSecond += c.rate;
    }
    for (const auto &t : m_tallies)
        for (const auto &e : t.epochs)
            if (t.expiresAt > now && e.epoch == g.globalEpoch) {
                const auto c = counted(t, e, cap, most, now);
                reported += c.reported;
                g.samplesAccumulated += c.extrapolated;
                g.samplesPerSecond += c.rate;
            }
    g.reportedSamples = static_cast<long>(reported);
    const double missing = static_cast<double>(m_options.targetBatchSize) - g.samplesAccumulated;
    if (missing <= 0.0)
        g.eta = 0.0;
    else
        g.eta = g.samplesPerSecond > 0.0 ? missing / g.samplesPerSecond : std::numeric_limits<double>::infinity();
    return g;
}

void ProgressTracker::tallyEpochs(const EpochSupport &support, long held, long &donorsMax, long &trainersMax,
                                  GlobalProgress &g, double now) const
{
    for (const auto &t : m_tallies) {
        if (t.expiresAt <= now)
            continue;
        g.peers += t.peers;
        g.clientPeers += t.clients;
        for (const auto &c : t.epochs) {
            const auto holders = t.support.find(c.epoch);
            if (c.peers <= 0 || !support.withinOne(c.epoch, holders == t.support.end() ? 0 : holders->second))
                continue;
            if (c.trainers > 0)
                trainersMax = std::max(trainersMax, std::min(c.epoch, held));
            if (c.donors > 0 && c.epoch <= held)
                donorsMax = std::max(donorsMax, c.epoch);
        }
    }
}

ProgressTracker::Counted ProgressTracker::counted(const ShardTally &t, const EpochCount &e, double cap,
                                                  double allowance, double now) const
{
    Counted c;
    if (e.peers <= 0)
        return c;
    const double n = e.peers;
    const double most = std::min(allowance, static_cast<double>(maxSamplesPerEpoch(m_options.targetBatchSize)));
    c.rate = std::min(e.rate, n * std::min(cap, MaxSamplesPerSecond));
    c.reported = std::min(e.reported, n * most);
    c.extrapolated = std::min(e.samples + c.rate * std::clamp(now - t.time, 0.0, 1e6), n * most);
    return c;
}

double ProgressTracker::rateCap(long epoch, double now) const
{
    std::vector<double> rates;
    for (const auto &[id, r] : m_records)
        if (r.expiresAt > now && r.epoch == epoch && r.samplesPerSecond > 0.0)
            rates.push_back(r.samplesPerSecond);
    if (rates.empty())
        return std::numeric_limits<double>::infinity();
    const auto middle = rates.begin() + static_cast<std::ptrdiff_t>(rates.size() / 2);
    std::nth_element(rates.begin(), middle, rates.end());
    double median = *middle;
    if (rates.size() % 2 == 0)
        median = (median + *std::max_element(rates.begin(), middle)) / 2.0;
    return std::max(1.0, m_options.maxRateOverMedian) * median;
}

double ProgressTracker::allowance(long epoch, double cap, double now, double slack) const
{
    const double began = m_clock.began(epoch);
    if (std::isnan(began) || !std::isfinite(cap))
        return std::numeric_limits<double>::infinity();
    return cap * (std::max(0.0, now - began) + slack);
}

ProgressTracker::Counted ProgressTracker::counted(const ProgressRecord &r, double cap, double allowance,
                                                  double now) const
{
    Counted c;
    c.rate = std::min(r.samplesPerSecond, cap);
    c.reported = std::min(static_cast<double>(r.samplesAccumulated), allowance);
    c.extrapolated =
        std::min(static_cast<double>(r.samplesAccumulated) + c.rate * std::max(0.0, now - r.time), allowance);
    return c;
}

StepDecision ProgressTracker::decide(long localEpoch, double now) const
{
    const auto g = global(now, localEpoch);
    if (g.globalEpoch > localEpoch)
        return StepDecision::Resync;
    const double target = static_cast<double>(m_options.targetBatchSize);
    const bool step = static_cast<double>(g.reportedSamples) >= target
                      || (g.samplesAccumulated >= target
                          && static_cast<double>(g.reportedSamples) >= m_options.minReportedFraction * target);
    if (!step)
        return StepDecision::Accumulate;
    // No honest peer computes for the next epoch before this one's step was due (EpochClock).
    m_clock.decidedStep(localEpoch, now);
    return StepDecision::Step;
}

bool ProgressTracker::shouldStartMatchmaking(long localEpoch, double now) const
{
    const auto g = global(now, localEpoch);
    return g.globalEpoch <= localEpoch && g.eta <= m_options.matchmakingTime;
}

ProgressTracker::WeightBounds ProgressTracker::weightBounds(long epoch, double now) const
{
    WeightBounds b;
    const double cap = rateCap(epoch, now);
    if (!std::isfinite(cap))
        return b;
    // A reducer that does not train sees an epoch begin only when it reads the records (a read
    // period late): the weights keep the clock skew as their slack.
    b.others = allowance(epoch, cap, now, m_options.allowedClockSkew);
    for (const auto &[id, r] : m_records)
        if (r.expiresAt > now && r.epoch == epoch)
            b.perPeer[id] =
                std::min(b.others, counted(r, cap, b.others, now).extrapolated + cap * m_options.allowedClockSkew);
    return b;
}

std::vector<ProgressRecord> ProgressTracker::liveRecords(double now) const
{
    std::vector<ProgressRecord> out;
    for (const auto &[id, r] : m_records)
        if (r.expiresAt >= now)
            out.push_back(r);
    return out;
}

std::vector<std::string> ProgressTracker::expectedPeers(const std::string &self, long epoch, long lag, double maxAge,
                                                        double now) const
{
    std::vector<std::string> out;
    for (const auto &[id, r] : m_records) {
        const bool inStep = r.role != PeerRole::Trainer || (r.epoch <= epoch && r.epoch >= epoch - lag);
        if (id != self && r.expiresAt >= now && now - r.time < maxAge && r.averages && !r.paused && !r.syncing && inStep)
            out.push_back(id);
    }
    return out;
}

} // namespace dedloc
