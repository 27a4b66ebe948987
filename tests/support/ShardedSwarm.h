#pragma once
// Swarms of progress records for the tests of progress shards (averaging/ProgressShards.h,
// ProgressExchange.h): peer ids as PeerIdentity makes them, records of a swarm, signed tallies.
#include "ProgressRecords.h"
#include "averaging/ProgressShards.h"
#include "net/DhtNode.h"

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace dedloc::test {

// `n` peer ids as PeerIdentity makes them (32 hex digits), drawn from `seed`.
inline std::vector<std::string> peerIds(int n, unsigned seed)
{
    std::mt19937_64 draw(seed);
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
        char id[33];
        std::snprintf(id, sizeof id, "%016llx%016llx", static_cast<unsigned long long>(draw()),
                      static_cast<unsigned long long>(draw()));
        ids.emplace_back(id);
    }
    return ids;
}

// A swarm of `ids.size()` trainers made at `time`: most at `epoch`, one in eight at `epoch` - 1,
// rates of 10-30 samples/s and 0-99 samples each.
inline std::vector<ProgressRecord> swarm(const std::vector<std::string> &ids, long epoch, double time)
{
    std::vector<ProgressRecord> out;
    for (std::size_t i = 0; i < ids.size(); ++i)
        out.push_back(progressRecord(ids[i], i % 8 == 7 ? epoch - 1 : epoch, static_cast<long>(i * 37 % 100),
                                           10.0 + static_cast<double>(i * 13 % 21), time));
    return out;
}

inline SignedRecord signedTally(const std::string &payload, const std::string &by = "summarizer", double time = 100.0)
{
    SignedRecord r;
    r.peerId = by;
    r.time = time;
    r.expiresAt = time + 30.0;
    r.payload = payload;
    return r;
}

// A peer id whose first 8 hex digits are `v`: in shard v mod K.
inline std::string idOf(unsigned v)
{
    char head[9];
    std::snprintf(head, sizeof head, "%08x", v);
    return head + std::string(24, '0');
}

// The records of `records` in shard `shard` of `shardCount`.
inline std::vector<ProgressRecord> inShard(const std::vector<ProgressRecord> &records, int shardCount, int shard)
{
    std::vector<ProgressRecord> out;
    for (const auto &r : records)
        if (shardOf(r.peerId, shardCount) == shard)
            out.push_back(r);
    return out;
}

// A tally made at `time` of every shard of `shardCount` but `own`, each signed by a summarizer of it.
inline std::vector<SignedRecord> talliesOfOthers(const std::vector<ProgressRecord> &records, int shardCount, int own,
                                                 double time)
{
    std::vector<SignedRecord> out;
    for (int s = 0; s < shardCount; ++s)
        if (s != own)
            out.push_back(signedTally(encodeTally(tallyShard(records, shardCount, s, time)),
                                      idOf(static_cast<unsigned>(s)), time));
    return out;
}

} // namespace dedloc::test
