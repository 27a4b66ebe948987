#pragma once
// Fixtures of the group-merge suites (tst_groupmerge, tst_groupseal): peers in threads, each with
// its own OpenDHT node (bootstrapped to the first), service socket and GroupMerger, on loopback;
// fp16 updates of a fixed size; group records and groups of two.
#include "averaging/GroupMerge.h"
#include "averaging/PeerService.h"
#include "net/PeerIdentity.h"

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <vector>

namespace dedloc::test {

inline const std::string MergeRun = "merge-test";
inline constexpr long MergeEpoch = 5;
inline constexpr std::size_t MergeElements = 3000;

// MergeElements values: scale x sin(0.01 i) + offset.
[[nodiscard]] std::vector<float> ramp(float scale, float offset);
// An fp16 update of MergeEpoch holding `values`, for a batch of `batchSamples`.
[[nodiscard]] std::shared_ptr<const AveragedUpdate> fp16Update(const std::vector<float> &values, long batchSamples);
// A member's record of `group` at MergeEpoch (digest "": announced only).
[[nodiscard]] GroupRecord record(const std::string &peer, const std::string &group, long weight, std::size_t members,
                                 const std::string &digest, const std::string &endpoint = "tcp://127.0.0.1:9");

struct MergePeer {
    PeerIdentity identity = PeerIdentity::generate();
    std::unique_ptr<DhtNode> dht;
    std::unique_ptr<PeerService> service;
    std::unique_ptr<GroupMerger> merger;
};

// `targetGroupSize`: the largest group (MergeOptions): a swarm of more peers is larger than one
// group. Merge options: maxGroupWeight 100, formingWait 3 s.
[[nodiscard]] std::vector<std::unique_ptr<MergePeer>> makePeers(std::size_t count, std::size_t targetGroupSize = 2);
// The group of peers `first` and `first + 1` at MergeEpoch.
[[nodiscard]] GroupInfo groupOf(const std::string &id, const std::vector<std::unique_ptr<MergePeer>> &peers,
                                std::size_t first);
// Peers 0..count-1 merge at once: 0 and 1 as group `ga` with average `a`, the others as `gb`
// with `b`, each expecting `expected` peers at the epoch.
[[nodiscard]] std::vector<std::future<MergeResult>>
mergeAtOnce(const std::vector<std::unique_ptr<MergePeer>> &peers, std::size_t count, const GroupInfo &ga,
            const std::shared_ptr<const AveragedUpdate> &a, const GroupInfo &gb,
            const std::shared_ptr<const AveragedUpdate> &b, std::size_t expected, const std::atomic<bool> &stop);

} // namespace dedloc::test
