#include "MergeFixtures.h"

#include "compress/Compression.h"

#include <cmath>

namespace dedloc::test {

std::vector<float> ramp(float scale, float offset)
{
    std::vector<float> v(MergeElements);
    for (std::size_t i = 0; i < MergeElements; ++i)
        v[i] = scale * std::sin(0.01F * static_cast<float>(i)) + offset;
    return v;
}

std::shared_ptr<const AveragedUpdate> fp16Update(const std::vector<float> &values, long batchSamples)
{
    AveragedUpdate u;
    u.epoch = MergeEpoch;
    u.batchSamples = batchSamples;
    u.codec = Compression::Fp16;
    u.elements = values.size();
    u.pieces = {{0, values.size()}};
    u.bytes = encode(Compression::Fp16, values);
    return std::make_shared<const AveragedUpdate>(std::move(u));
}

GroupRecord record(const std::string &peer, const std::string &group, long weight, std::size_t members,
                   const std::string &digest, const std::string &endpoint)
{
    return {peer, {}, MergeEpoch, group, weight, members, digest, endpoint, {}, {}};
}

std::vector<std::unique_ptr<MergePeer>> makePeers(std::size_t count, std::size_t targetGroupSize)
{
    std::vector<std::unique_ptr<MergePeer>> peers;
    MergeOptions options;
    options.maxGroupWeight = 100.0;
    options.formingWait = 3.0;
    options.targetGroupSize = targetGroupSize;
    for (std::size_t i = 0; i < count; ++i) {
        auto p = std::make_unique<MergePeer>();
        p->dht = std::make_unique<DhtNode>(p->identity);
        if (i > 0)
            p->dht->bootstrap("127.0.0.1:" + std::to_string(peers.front()->dht->port()));
        p->service = std::make_unique<PeerService>(MergeRun);
        p->merger = std::make_unique<GroupMerger>(*p->dht, p->service.get(), MergeSelf{p->identity.peerId(), MergeRun}, options);
        peers.push_back(std::move(p));
    }
    for (auto &p : peers)
        p->dht->waitForNodes(1, 5.0);
    return peers;
}

GroupInfo groupOf(const std::string &id, const std::vector<std::unique_ptr<MergePeer>> &peers, std::size_t first)
{
    GroupInfo g{id, MergeEpoch, {}};
    for (std::size_t i = first; i < first + 2; ++i)
        g.members.push_back({peers[i]->identity.peerId(), "tcp://127.0.0.1:1", 1.0, 1.0, peers[i]->identity.publicKey()});
    return g;
}

std::vector<std::future<MergeResult>> mergeAtOnce(const std::vector<std::unique_ptr<MergePeer>> &peers, std::size_t count,
                                                  const GroupInfo &ga, const std::shared_ptr<const AveragedUpdate> &a,
                                                  const GroupInfo &gb, const std::shared_ptr<const AveragedUpdate> &b,
                                                  std::size_t expected, const std::atomic<bool> &stop)
{
    std::vector<std::future<MergeResult>> results;
    for (std::size_t i = 0; i < count; ++i)
        results.push_back(std::async(std::launch::async, [&, i, expected] {
            return peers[i]->merger->merge(i < 2 ? ga : gb, i < 2 ? a : b, [expected] { return expected; }, 0.1, stop);
        }));
    return results;
}

} // namespace dedloc::test
