#include "RogueMember.h"

#include "net/DataPlaneSecurity.h"
#include "net/WireMessage.h"

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

namespace dedloc::test {

struct RogueMember::Impl {
    DataPlaneSecurity security;
    std::string groupId;
    std::uint32_t index = 0;
    ShardSchema ownShard;  // PARTs it receives
    ShardSchema anyResult; // RESULTs it receives: any shard of the group
    // Destroyed in reverse: sockets, then the ZAP handler, then the context.
    zmq::context_t context;
    std::unique_ptr<ZapHandler> zap;
    zmq::socket_t router;
    std::map<std::uint32_t, zmq::socket_t> dealers;
    std::vector<double> resultWeights;
    std::atomic<bool> done{false};
    std::thread thread;

    Impl(const PeerIdentity &identity, std::string group, std::uint32_t me, std::uint32_t members,
         std::uint64_t shardElements, std::uint64_t partElements)
        : security(identity, AccessPolicy{}), groupId(std::move(group)),
          index(me), ownShard{groupId, members, shardElements, partElements, Compression::None},
          anyResult{groupId, members, std::uint64_t{1} << 40, partElements, Compression::None},
          zap(security.startZap(context)), router(context, zmq::socket_type::router)
    {
        router.set(zmq::sockopt::linger, 0);
        security.configureServer(router);
        router.bind("tcp://127.0.0.1:*");
    }

    void send(const RoguePart &p)
    {
        const ShardHeader h{MessageType::Part, groupId,  index,           p.reducer, p.part,
                            p.parts,           p.offset, p.values.size(), p.weight,  Compression::None};
        const auto encoded = encodeShardHeader(h);
        const std::string header = p.rawHeader.empty() ? std::string(encoded.begin(), encoded.end()) : p.rawHeader;
        std::array<zmq::message_t, 2> frames{zmq::message_t(header.data(), header.size()),
                                             zmq::message_t(p.values.data(), p.values.size() * sizeof(float))};
        zmq::send_multipart(dealers.at(p.reducer), frames);
    }

    void answer(std::vector<zmq::message_t> &in, const RogueAnswer &a)
    {
        if (in.size() != 3)
            return;
        const auto part = parseShardHeader({in[1].data<std::uint8_t>(), in[1].size()}, ownShard);
        const ShardHeader h{MessageType::Result, groupId,     index,      index,    part.part,
                            part.parts,          part.offset, part.count, a.weight, Compression::None};
        const auto header = encodeShardHeader(h);
        const std::vector<float> values(part.count, a.value);
        std::array<zmq::message_t, 3> frames{std::move(in[0]), zmq::message_t(header.data(), header.size()),
                                             zmq::message_t(values.data(), values.size() * sizeof(float))};
        zmq::send_multipart(router, frames);
    }

    void run(const std::vector<RoguePart> &parts, const std::optional<RogueAnswer> &answerWith)
    {
        for (const auto &p : parts)
            send(p);
        std::vector<zmq::pollitem_t> items{{router.handle(), 0, ZMQ_POLLIN, 0}};
        std::vector<zmq::socket_t *> sockets{&router};
        for (auto &[member, dealer] : dealers) {
            items.push_back({dealer.handle(), 0, ZMQ_POLLIN, 0});
            sockets.push_back(&dealer);
        }
        while (!done.load()) {
            zmq::poll(items.data(), items.size(), std::chrono::milliseconds(20));
            for (std::size_t i = 0; i < items.size(); ++i) {
                std::vector<zmq::message_t> in;
                if (!(items[i].revents & ZMQ_POLLIN) || !zmq::recv_multipart(*sockets[i], std::back_inserter(in)))
                    continue;
                try {
                    if (i == 0 && answerWith)
                        answer(in, *answerWith);
                    else if (i > 0 && !in.empty())
                        resultWeights.push_back(
                            parseShardHeader({in[0].data<std::uint8_t>(), in[0].size()}, anyResult).weight);
                } catch (const ProtocolError &) {
                    // not a message of this round: a rogue has no reason to care
                }
            }
        }
    }
};

RogueMember::RogueMember(const PeerIdentity &identity, std::string groupId, std::uint32_t index, std::uint32_t members,
                         std::uint64_t shardElements, std::uint64_t partElements)
    : d(std::make_unique<Impl>(identity, std::move(groupId), index, members, shardElements, partElements))
{
}

RogueMember::~RogueMember()
{
    stop();
}

std::string RogueMember::endpoint() const
{
    return d->router.get(zmq::sockopt::last_endpoint);
}

void RogueMember::connect(std::uint32_t member, const std::string &endpoint,
                          const std::array<unsigned char, 32> &serverKey)
{
    auto [it, added] = d->dealers.try_emplace(member, d->context, zmq::socket_type::dealer);
    it->second.set(zmq::sockopt::linger, 0);
    d->security.configureClient(it->second, serverKey);
    it->second.connect(endpoint);
}

void RogueMember::start(std::vector<RoguePart> parts, std::optional<RogueAnswer> answer)
{
    d->thread = std::thread([this, parts = std::move(parts), answer] { d->run(parts, answer); });
}

void RogueMember::stop()
{
    d->done = true;
    if (d->thread.joinable())
        d->thread.join();
}

std::vector<double> RogueMember::resultWeights() const
{
    return d->resultWeights;
}

} // namespace dedloc::test
