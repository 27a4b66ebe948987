#pragma once
// The shard shares of a group's BEGIN (docs/PROTOCOL.md "Matchmaking"): the leader decides every
// member's share of the vector from the bandwidths the members joined with, so that all of them
// lay out the same shards (averaging/LoadBalancing.h), and each follower checks the shares it
// receives against those bandwidths, so that a leader cannot hand itself the vector.
// Units: shares out of ShardShareTotal (2^20, averaging/SwarmMessages.h); bandwidths in the unit
// the swarm shares (Mbit/s). Threads: any. Errors: below.
#include "averaging/SwarmMessages.h"

#include <string>
#include <vector>

namespace dedloc {

// Sets every member's `share` from the bandwidths (a client-mode member, without an endpoint,
// gets none); `capped` (open runs): no share above twice an even one of the reducers
// (LoadBalancing.h fairShareCap). False, leaving the shares unset, when nobody can reduce.
bool assignShardShares(std::vector<GroupMember> &members, bool capped);

// A follower's check of a BEGIN: every share within ShareTolerance units of what the listed
// bandwidths give (another machine's floating point moves a share by one or two). Throws
// ProtocolError naming the member whose share differs, or saying the bandwidths give no shares.
inline constexpr std::int64_t ShareTolerance = 16;
void checkShares(const std::vector<GroupMember> &members, bool capped);

// Why a BEGIN's entry `member` does not list the peer as `joined` asked ("" if it does): a leader
// must not turn it into an auxiliary or a reducer, ask for a repair it did not ask for, change
// its state digest (dropping it is allowed: that only keeps the state round) or its bandwidth.
// The follower refuses such a BEGIN (Matchmaker::follow); the leader's service sends DISBAND
// instead of it to a follower that joined again after the leader read it (PeerService::begin).
[[nodiscard]] std::string joinedOtherwise(const GroupMember &member, const JoinRequest &joined);

} // namespace dedloc
