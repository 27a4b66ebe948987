#include "averaging/RoundLayout.h"

#include "averaging/LoadBalancing.h"
#include "util/Error.h"

#include <string>

namespace dedloc::allreduce {

namespace {

// Shard sizes from the leader's shares (every member computes the same integers), or, in a group
// without shares (tests and benchmarks that form none), from the bandwidths; in units of
// `alignment` elements (the codec's), the last shard with any taking the remainder.
std::vector<std::int64_t> layOutShards(const std::vector<GroupMember> &members, std::int64_t elements,
                                       std::int64_t minShardElements, std::int64_t alignment)
{
    if (alignment > 1) {
        const std::int64_t units = (elements + alignment - 1) / alignment;
        auto shards = layOutShards(members, units, (minShardElements + alignment - 1) / alignment, 1);
        for (auto &s : shards)
            s *= alignment;
        for (auto it = shards.rbegin(); it != shards.rend(); ++it)
            if (*it > 0) {
                *it -= units * alignment - elements; // < alignment <= *it
                break;
            }
        return shards;
    }
    std::vector<std::int64_t> shares;
    std::vector<double> bandwidths;
    bool leaderDecided = false;
    for (const auto &m : members) {
        if (m.endpoint.empty() && m.share != 0)
            throw Error("all-reduce: client-mode member " + m.peerId + " was given a shard");
        shares.push_back(m.share);
        bandwidths.push_back(m.endpoint.empty() ? 0.0 : m.bandwidth);
        leaderDecided = leaderDecided || m.share != 0;
    }
    return leaderDecided ? shardsFromShares(elements, shares) : balanceShards(elements, bandwidths, minShardElements);
}

} // namespace

RoundContext layOutRound(const std::string &groupId, const std::vector<GroupMember> &members, std::size_t me,
                         std::span<float> values, const AllReduceOptions &options)
{
    const std::size_t n = members.size();
    if (n == 0 || me >= n)
        throw Error("all-reduce: member index " + std::to_string(me) + " outside a group of " + std::to_string(n));
    RoundContext round;
    round.groupId = groupId;
    round.members = members;
    round.me = me;
    const auto alignment = codecAlignment(options.codec);
    round.shardSizes = layOutShards(members, static_cast<std::int64_t>(values.size()), options.minShardElements,
                                    static_cast<std::int64_t>(alignment));
    round.shardOffsets.assign(n, 0);
    for (std::size_t j = 1; j < n; ++j)
        round.shardOffsets[j] = round.shardOffsets[j - 1] + round.shard(j - 1);
    round.codec = options.codec;
    const std::size_t partElements = options.partElements ? options.partElements : defaultPartElements(options.codec);
    round.partElements = (partElements + alignment - 1) / alignment * alignment;
    round.myWeight = options.myWeight >= 0.0 ? options.myWeight : members[me].weight;
    round.maxWeight = options.maxWeight;
    round.weightBounds.assign(n, options.otherSendersWeightBound);
    for (std::size_t j = 0; j < n; ++j)
        if (const auto it = options.senderWeightBounds.find(members[j].peerId); it != options.senderWeightBounds.end())
            round.weightBounds[j] = it->second;
    round.senderTimeout = options.senderTimeout;
    round.staggered = options.staggered;
    round.uploadMbit = options.uploadMbit;
    round.roundTripSeconds = options.roundTripSeconds;
    round.aggregation = options.aggregation;
    round.values = values;
    round.upload = options.upload;
    round.capture = options.capture;
    return round;
}

} // namespace dedloc::allreduce
