#include "MatchmakerFixtures.h"

#include "averaging/SwarmMessages.h"

#include <nlohmann/json.hpp>
#include <zmq_addon.hpp>

#include <algorithm>
#include <array>
#include <future>

namespace dedloc::test {

MatchmakingOptions fastOptions()
{
    MatchmakingOptions o;
    o.window = 2.0;
    o.requestTimeout = 1.0;
    o.fetchInterval = 0.1;
    return o;
}

std::vector<std::unique_ptr<Peer>> makePeers(const std::vector<bool> &clientMode, const MatchmakingOptions &options,
                                             const std::string &runId)
{
    std::vector<std::unique_ptr<Peer>> peers;
    for (std::size_t i = 0; i < clientMode.size(); ++i) {
        auto p = std::make_unique<Peer>();
        p->dht = std::make_unique<DhtNode>(p->identity);
        if (i > 0)
            p->dht->bootstrap("127.0.0.1:" + std::to_string(peers.front()->dht->port()));
        if (!clientMode[i])
            p->service = std::make_unique<PeerService>(runId);
        MatchSelf self{p->identity.peerId(), runId, clientMode[i] ? "" : "tcp://127.0.0.1:1" + std::to_string(i),
                       -1.0, clientMode[i], true, p->identity.publicKey()};
        p->matchmaker = std::make_unique<Matchmaker>(*p->dht, p->service.get(), self, options);
        peers.push_back(std::move(p));
    }
    for (auto &p : peers) // a swarm whose nodes know each other, as after a while in practice
        p->dht->waitForNodes(static_cast<unsigned>(std::min<std::size_t>(peers.size() - 1, 1)), 5.0);
    return peers;
}

Pair formPair(std::vector<std::unique_ptr<Peer>> &peers, long epoch, std::size_t e0, std::size_t e1)
{
    std::atomic<bool> stop{false};
    auto a = std::async(std::launch::async, [&] { return peers[0]->matchmaker->formGroup(epoch, "s", [e0] { return e0; }, stop); });
    auto b = std::async(std::launch::async, [&] { return peers[1]->matchmaker->formGroup(epoch, "s", [e1] { return e1; }, stop); });
    auto ga = a.get();
    return {std::move(ga), b.get()};
}

double seconds(std::chrono::steady_clock::time_point since)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

FakeLeader::FakeLeader(Script script)
{
    router.set(zmq::sockopt::linger, 0);
    router.bind("tcp://127.0.0.1:*");
    endpoint = router.get(zmq::sockopt::last_endpoint);
    thread = std::thread([this, script = std::move(script)] { serve(script); });
}

FakeLeader::~FakeLeader()
{
    done = true;
    thread.join();
}

bool FakeLeader::declare(long epoch, const std::string &schema, double deadline)
{
    const Declaration d{identity.peerId(), epoch, schema, endpoint, deadline, false, {}};
    return dht.publish(matchmakingKey("mm-test", epoch, schema), encodeDeclaration(d), 30.0);
}

GroupMember FakeLeader::asMember() const
{
    return {identity.peerId(), "tcp://127.0.0.1:9", -1.0, 1.0, identity.publicKey(), ShardShareTotal};
}

void FakeLeader::serve(const Script &script)
{
    while (!done.load()) {
        zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
        zmq::poll(&item, 1, std::chrono::milliseconds(20));
        std::vector<zmq::message_t> in;
        if (!(item.revents & ZMQ_POLLIN) || !zmq::recv_multipart(router, std::back_inserter(in)) || in.size() != 2)
            continue;
        JoinRequest join;
        try {
            join = joinFromJson(parseServiceMessage({in[1].data<std::uint8_t>(), in[1].size()}));
        } catch (const ProtocolError &) {
            continue;
        }
        ++joins;
        for (const auto &reply : script(*this, join)) {
            std::array<zmq::message_t, 2> frames{zmq::message_t(in[0].data(), in[0].size()),
                                                 zmq::message_t(reply.data(), reply.size())};
            zmq::send_multipart(router, frames);
        }
    }
}

std::unique_ptr<Peer> followerOf(FakeLeader &leader, const MatchmakingOptions &options, std::shared_ptr<BanList> bans)
{
    auto p = std::make_unique<Peer>();
    p->dht = std::make_unique<DhtNode>(p->identity);
    p->dht->bootstrap("127.0.0.1:" + std::to_string(leader.dht.port()));
    p->dht->waitForNodes(1, 5.0);
    leader.dht.waitForNodes(1, 5.0);
    MatchSelf self{p->identity.peerId(), "mm-test", "", -1.0, true, true, p->identity.publicKey()};
    p->matchmaker = std::make_unique<Matchmaker>(*p->dht, nullptr, self, options, nullptr, std::move(bans));
    return p;
}

Outcome formGroupGuarded(Matchmaker &m, const MatchmakingOptions &o, long epoch)
{
    std::atomic<bool> stop{false};
    auto f = std::async(std::launch::async, [&] {
        Outcome out;
        try {
            out.group = m.formGroup(epoch, "s", [] { return std::size_t(2); }, stop, &out.why);
        } catch (const std::exception &e) {
            out.thrown = e.what();
        }
        return out;
    });
    const bool finished =
        f.wait_for(std::chrono::duration<double>(o.window + 2 * o.requestTimeout + 10.0)) == std::future_status::ready;
    stop = true;
    auto out = f.get();
    out.finished = finished;
    return out;
}

} // namespace dedloc::test
