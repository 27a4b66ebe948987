#pragma once
// One peer's turn of progress records on the DHT, in shards once the swarm outgrows one key
// (averaging/ProgressShards.h, docs/PROTOCOL.md "Progress shards"): where its record goes, what
// it reads, and the tally it publishes while it summarizes its shard. The swarm's control thread
// and the simulator's peers share it.
// Threads: publish(), read() and publishTally() block on the DHT (each put or fetch at most
// `timeout` seconds); ingest() is pure and runs under the caller's lock beside its tracker. One
// control thread uses an exchange; not thread-safe.
#include "averaging/ProgressShards.h"
#include "averaging/ProgressTracker.h"
#include "net/DhtNode.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dedloc {

class ProgressExchange final {
public:
    // `fresh`: tallyShard's, the expected peers' maxAge of this swarm's peers.
    ProgressExchange(std::string swarmId, std::string selfId, int capacity = DefaultShardCapacity,
                     double fresh = DefaultFreshRecordSeconds);

    // Publishes `record`, its shardCount set to this peer's, under this peer's kinds (two while
    // K changes, and the key of one shard while this peer summarizes shard 0 of several, where
    // joiners look); whether the put under its current shard was confirmed.
    bool publish(DhtNode &dht, ProgressRecord record, double ttl, double timeout = 2.0);

    struct Read {
        std::vector<SignedRecord> records; // progress records, of every kind read
        std::vector<SignedRecord> tallies; // tallies of this peer's K (none while K is 1)
    };
    [[nodiscard]] Read read(DhtNode &dht, double timeout = 2.0) const;

    // Takes one turn's admitted records and tallies (parsed and checked by the caller; this
    // peer's own record may be among them): records of this peer's shard update `tracker`;
    // the tallies chosen per shard (chooseTallies) go to it, a shard without one keeping its last
    // until it expires, or else tallied from the records of it read here (while K changes);
    // tallies counting more peers than twice this shard's and twice the capacity are refused;
    // for ShardChangeSeconds after this peer grew K, a shard of the K before none of whose parts
    // has a tally yet counts by its tally there; then K follows the estimated swarm, the
    // tracker keeping only its new shard's records when it changes (the records let go count
    // as their shard's tally, the other shards as before, until the next ingest). Returns the tally to
    // publish when this peer summarizes its shard (K > 1), nullopt otherwise. Malformed tallies
    // count as none.
    // `refused`: signers whose tallies count no more, held ones included (banned peers).
    std::optional<ShardTally> ingest(const std::vector<ProgressRecord> &records,
                                     const std::vector<SignedRecord> &tallies, ProgressTracker &tracker, double now,
                                     const std::function<bool(const std::string &)> &refused = {});
    bool publishTally(DhtNode &dht, const ShardTally &tally, double ttl, double timeout = 2.0);

    [[nodiscard]] int shardCount() const { return m_layout.count(); }
    [[nodiscard]] int estimatedPeers() const { return m_estimate; }

private:
    // The tallies that parse and count no more peers than a shard of theirs can hold (twice this
    // peer's shard and twice the capacity, times K / their K for a smaller K); not `refused`'s.
    std::vector<ShardTally> parseTallies(const std::vector<SignedRecord> &tallies, int ownShardLive, double now,
                                         const std::function<bool(const std::string &)> &refused);
    // After K changed from `before`: the tracker keeps its new shard's records, and counts the
    // others by `others` and, after a growth, the records of `live` it lets go as their tallies.
    void changed(int before, const std::vector<ProgressRecord> &live, std::vector<ShardTally> others,
                 ProgressTracker &tracker, double now);
    // While this peer grows K: the tallies at the K before of the shards none of whose parts at K
    // has a tally among `tallied` (their peers have not moved yet).
    [[nodiscard]] std::vector<ShardTally> notMovedYet(const std::vector<ShardTally> &parsed,
                                                      const std::set<int> &tallied, double now) const;

    std::string m_swarmId, m_selfId;
    ShardLayout m_layout;
    double m_fresh;
    int m_estimate = 0;
    bool m_summarizes = false; // at the last ingest
    std::map<int, ShardTally> m_held; // the tally taken for each other shard, kept until it expires
};

} // namespace dedloc
