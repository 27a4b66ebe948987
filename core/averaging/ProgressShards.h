#pragma once
// Progress records in shards: a peer's control traffic bounded as the swarm grows (ours;
// hivemind's progress tracker reads every peer's record every turn, so each peer's reads grow
// with the swarm: ~0.4 kB per peer per turn, 0.4 MB a turn at 1 000 peers). docs/PROTOCOL.md
// "Progress shards".
//
// Up to `capacity` live peers (DefaultShardCapacity) nothing changes: one DHT key,
// dedloc/<swarm>/progress, and every peer reads every record. Beyond, the swarm splits into K
// shards, K a power of two, about N / K <= capacity peers in each:
//   - a peer's shard is the first 32 bits of its id (hex) modulo K (shardOf): the shards at 2K
//     split those at K in two, and a shard's peers are a uniform sample of the swarm;
//   - its record goes to dedloc/<swarm>/progress/<K>/<shard> (shardKind); it reads its own
//     shard's records in full (its ProgressTracker holds those) and, for every other shard, a
//     ShardTally: the shard's live records counted by epoch (tallyShard), published under
//     dedloc/<swarm>/progress/<K>/tallies (tallyKind) by the shard's summarizers, the
//     SummarizersPerShard live peers of the shard with the smallest ids (summarizes). Per shard
//     a reader takes, among its summarizers' tallies, the one with the median peer count
//     (chooseTallies): one lying summarizer among three chooses nothing. A shard without a tally
//     read keeps its last one, or is tallied from the records of it that this peer read (while K
//     changes), or else estimated at its own shard's size (estimatedPeers: size only);
//   - per turn a peer thus reads about N / K + 3K records instead of N: with K the power of two
//     above N / capacity, at most capacity + 3K (112 records at N = 1 000 and capacity 64), at
//     most 2 x capacity up to N = 1 024 at 64. Beyond, the tallies grow as 3N / capacity (a
//     second level of tallies would bound them again: not built).
// K (ShardLayout) grows to the smallest power of two with N <= capacity x K once the estimated
// swarm N exceeds capacity x K, and halves when N < capacity x K / 4 (hysteresis: a swarm of
// about `capacity` does not flap). A peer adopts a larger K that a live record carries, unless it
// left that K itself in the last 2 x ShardChangeSeconds, so one peer's change spreads within a
// turn, or its estimate would halve it again (a stranger's record claiming 1 024 shards moves
// nobody). For ShardChangeSeconds after a change a peer publishes under its old key besides its
// new one (a summarizer its tally too, so that every shard hears of a growth) and reads its own
// shard's part of its old key; a peer reads its part of the keys of a larger K seen in that time:
// peers on either side of a change keep seeing each other. A joiner starts at one shard and reads the key of one shard:
// there the summarizers of shard 0 also publish their records while K > 1 (ProgressExchange);
// seeing their K, it reads that K's tallies at once and estimates the swarm from them.
//
// Records carry their publisher's K (ProgressRecord::shardCount, payload "h"; absent: 1).
// Pure logic, no I/O and no clock of its own (callers pass Unix seconds). Not thread-safe.
#include "averaging/SwarmMessages.h"
#include "net/DhtNode.h"

#include <map>
#include <string>
#include <vector>

namespace dedloc {

inline constexpr int DefaultShardCapacity = 64;
inline constexpr int MaxShardCount = 1024;
inline constexpr int SummarizersPerShard = 3;
inline constexpr double ShardChangeSeconds = 30.0;
// The most peers a tally may count; a reader bounds it further to 4 x its capacity.
inline constexpr int MaxTallyPeers = 4096;
// The most distinct epochs a tally lists (the highest ones): an honest shard holds two or three.
inline constexpr std::size_t MaxTallyEpochs = 8;
inline constexpr std::size_t MaxTallyMonitors = 4;

// The shard of `peerId` among `shardCount` (a power of two): its first 8 hex digits as a number,
// modulo shardCount; 0 for an id that does not start with 8 hex digits.
[[nodiscard]] int shardOf(const std::string &peerId, int shardCount);
// The DHT key kind (runKey's second argument) of a shard's records: "progress" when there is
// one shard, "progress/<K>/<shard>" otherwise; and of the tallies of K shards.
[[nodiscard]] std::string shardKind(int shardCount, int shard);
[[nodiscard]] std::string tallyKind(int shardCount);
// The shard count a progress record's payload carries ("h"), 1 when absent or malformed.
[[nodiscard]] int shardCountOf(const std::string &progressPayload);

// Live records of one shard at one epoch (their own epoch).
struct EpochCount {
    long epoch = 0;
    int peers = 0;           // live records at this epoch
    int trainers = 0;        // of which trainers
    int donors = 0;          // of which not in client mode and not auxiliaries (state donors)
    int averaging = 0;       // of which trainers that join groups now: averaging, neither paused
                             // nor syncing, made at most `fresh` seconds before the tally
    double reported = 0.0;   // samples as reported
    double samples = 0.0;    // samples extrapolated to the tally's time, each by its own rate
    double rate = 0.0;       // samples/s
};

struct ShardTally {
    std::string summarizer;  // the signer's peer id (from the signed record)
    int shardCount = 1, shard = 0;
    double time = 0.0, expiresAt = 0.0; // Unix seconds, the summarizer's clock (signed record)
    int peers = 0, clients = 0;         // live records, client-mode ones among them
    int helpers = 0;                    // live records of peers that do not train and average now
    // Supported epochs (a record's epoch, or the one its monitor follows) -> live records
    // (`support`) and voters among them (`votes`: neither paused nor auxiliaries), as
    // ProgressTracker's global epoch counts them; the MaxTallyEpochs highest epochs.
    std::map<long, int> support, votes;
    std::vector<EpochCount> epochs;     // by own epoch, the MaxTallyEpochs highest
    // The ids of the shard's monitors (the smallest MaxTallyMonitors): a trainer of another shard
    // takes the credit they publish of it (a monitor's signature is all that vouches for it).
    std::vector<std::string> monitors;
};

// The tally of the live records of `shard` among `records` at `now`; `fresh`: the most seconds
// since a record was made for its peer to count as joining groups (ProgressTracker::expectedPeers'
// maxAge: a peer that left without a last record stops being waited for as it would in a whole view).
inline constexpr double DefaultFreshRecordSeconds = 8.0;
[[nodiscard]] ShardTally tallyShard(const std::vector<ProgressRecord> &records, int shardCount, int shard, double now,
                                    double fresh = DefaultFreshRecordSeconds);
[[nodiscard]] std::string encodeTally(const ShardTally &tally);
// summarizer, time and expiresAt from the verified signed record. Throws ProtocolError for a
// malformed tally: K not a power of two up to MaxShardCount, shard out of range, more than
// MaxTallyPeers peers, counts that do not fit in the peers, too many epochs, negative or
// non-finite sums.
[[nodiscard]] ShardTally parseTally(const SignedRecord &record);
// One tally per shard other than `ownShard`, of `shardCount` shards, live at `now`: among the
// newest tally of each signer that belongs to the shard, those of its SummarizersPerShard smallest
// ids, and of them the one with the median peer count (the lower of two; ties to the smaller
// claim of samples). Tallies of another K are left out.
[[nodiscard]] std::vector<ShardTally> chooseTallies(std::vector<ShardTally> tallies, int shardCount, int ownShard,
                                                    double now);
// Whether `self` summarizes its shard: among the SummarizersPerShard smallest ids of the live,
// unpaused records of its shard in `records` (its own included).
[[nodiscard]] bool summarizes(const std::string &self, const std::vector<ProgressRecord> &records, int shardCount,
                              double now);

class ShardLayout final {
public:
    explicit ShardLayout(int capacity = DefaultShardCapacity);
    [[nodiscard]] int count() const { return m_count; }
    [[nodiscard]] int capacity() const { return m_capacity; }
    // A live record of a peer that uses `shardCount` shards was read at `now`.
    void saw(int shardCount, double now);
    // The swarm's estimated size: live records of this peer's shard, plus the peers of the
    // tallies of other shards, plus this peer's shard's size for each shard without a tally.
    [[nodiscard]] int estimatedPeers(int ownShardLive, const std::vector<ShardTally> &chosen) const;
    // The swarm's size by the live tallies of a K above this peer's among `tallies` (a joiner's
    // first read, or another shard's summarizer that changed K first): of the largest such K with
    // tallies of half its shards at least (a few forged tallies move nobody to a thousand shards,
    // nor hide the true K), its shards' chosen tallies, a shard without one counted as their
    // mean; 0 without such a K.
    [[nodiscard]] int estimatedFromTallies(const std::vector<ShardTally> &tallies, double now) const;
    // The K this peer used before its change while both keys are in use; 0 otherwise.
    [[nodiscard]] int previousCount(double now) const;
    // Applies the rules above to the estimate at `now`; returns whether K changed.
    bool update(int estimatedPeers, double now);
    // The kinds this peer's record goes under: its shard's at K, and its shard's at the K before
    // for ShardChangeSeconds after a change.
    [[nodiscard]] std::vector<std::string> publishKinds(const std::string &self, double now) const;
    // The kinds to read: this peer's shard at K, its part of the keys of the K before its change
    // for ShardChangeSeconds after it (the shard containing it) and of every larger K seen in the
    // last ShardChangeSeconds (its sub-shards, up to 8), the tallies of K when K > 1, and those
    // of the K before for ShardChangeSeconds after a growth (shards whose peers have not moved).
    [[nodiscard]] std::vector<std::string> readKinds(const std::string &self, double now) const;

private:
    int m_capacity;
    int m_count = 1;
    int m_previous = 1;
    double m_changedAt = -1e300;
    int m_leftCount = 0;           // the K this peer last halved from, and when
    double m_leftAt = -1e300;
    std::map<int, double> m_seen; // K -> when a live record of it was last read
};

} // namespace dedloc
