#pragma once
// The layout of one butterfly all-reduce round (averaging/ButterflyAllReduce.h), internal to it:
// which elements each member reduces and how they are cut into parts.
//   shards   from the leader's shares (shardsFromShares: every member computes the same
//            integers) or, in a group without shares (tests and benchmarks that form none),
//            from the bandwidths (balanceShards); client-mode members reduce nothing;
//   blocks   for a codec with codecAlignment() > 1 (TopK4Bit) the shards are laid out in whole
//            blocks, the last shard with any taking the remainder, and the part size is rounded
//            up to whole blocks, so that every part's blocks are the whole vector's;
//   weight   options.myWeight when >= 0, else the member list's.
// Pure; thread-safe. Errors: dedloc::Error for an empty group, an index out of range, a part size
// of 0, or a client-mode member given a share.
#include "averaging/PartSender.h"

namespace dedloc::allreduce {

[[nodiscard]] RoundContext layOutRound(const std::string &groupId, const std::vector<GroupMember> &members,
                                       std::size_t me, std::span<float> values, const AllReduceOptions &options);

} // namespace dedloc::allreduce
