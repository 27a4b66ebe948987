#include "averaging/GroupShares.h"

#include "averaging/LoadBalancing.h"
#include "util/Error.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace dedloc {

namespace {

// The bandwidths the shares follow: client-mode members (no endpoint) reduce nothing.
std::vector<double> shareBandwidths(const std::vector<GroupMember> &members)
{
    std::vector<double> bandwidths;
    for (const auto &m : members)
        bandwidths.push_back(m.endpoint.empty() ? 0.0 : m.bandwidth);
    return bandwidths;
}

} // namespace

bool assignShardShares(std::vector<GroupMember> &members, bool capped)
{
    try {
        const auto shares = shardShares(shareBandwidths(members), ShardShareTotal, capped);
        for (std::size_t i = 0; i < members.size(); ++i)
            members[i].share = shares[i];
        return true;
    } catch (const Error &) {
        return false;
    }
}

void checkShares(const std::vector<GroupMember> &members, bool capped)
{
    std::vector<std::int64_t> expected;
    try {
        expected = shardShares(shareBandwidths(members), ShardShareTotal, capped);
    } catch (const Error &e) {
        throw ProtocolError(std::string("BEGIN's bandwidths give no shares: ") + e.what());
    }
    for (std::size_t i = 0; i < members.size(); ++i)
        if (std::llabs(members[i].share - expected[i]) > ShareTolerance)
            throw ProtocolError("BEGIN gives " + members[i].peerId.substr(0, 8) + " a shard share of "
                                + std::to_string(members[i].share) + " where its bandwidth gives "
                                + std::to_string(expected[i]) + " of " + std::to_string(ShardShareTotal));
}

std::string joinedOtherwise(const GroupMember &member, const JoinRequest &joined)
{
    if (member.repair != joined.repair || (member.weight > 0.0) != joined.sender
        || (!member.stateDigest.empty() && member.stateDigest != joined.stateDigest)
        || member.endpoint != (joined.clientMode ? std::string() : joined.allReduceEndpoint))
        return "BEGIN lists this peer otherwise than it joined";
    if (member.bandwidth != (joined.clientMode ? 0.0 : joined.bandwidth) && !std::isnan(joined.bandwidth))
        return "BEGIN lists this peer's bandwidth otherwise than it joined";
    return {};
}

} // namespace dedloc
