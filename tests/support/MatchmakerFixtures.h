#pragma once
// Matchmaking fixtures for tests (core/averaging/Matchmaker.h): peers in threads of the test, each
// with its own OpenDHT node and service socket on loopback, and a leader written by hand.
#include "averaging/Matchmaker.h"
#include "averaging/PeerService.h"
#include "net/DhtNode.h"
#include "net/PeerIdentity.h"

#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dedloc::test {

struct Peer {
    PeerIdentity identity = PeerIdentity::generate();
    std::unique_ptr<DhtNode> dht;
    std::unique_ptr<PeerService> service;
    std::unique_ptr<Matchmaker> matchmaker;
};

// A 2 s window, 1 s requests, DHT reads every 0.1 s.
[[nodiscard]] MatchmakingOptions fastOptions();

// One peer per entry (true: client mode), their DHT nodes bootstrapped from the first one.
[[nodiscard]] std::vector<std::unique_ptr<Peer>> makePeers(const std::vector<bool> &clientMode,
                                                           const MatchmakingOptions &options,
                                                           const std::string &runId = "mm-test");

using Pair = std::pair<std::optional<FormedGroup>, std::optional<FormedGroup>>;

// Peers 0 and 1 look for a group of (epoch, "s") at once, expecting `e0` and `e1` peers.
[[nodiscard]] Pair formPair(std::vector<std::unique_ptr<Peer>> &peers, long epoch, std::size_t e0 = 2, std::size_t e1 = 2);

[[nodiscard]] double seconds(std::chrono::steady_clock::time_point since);

using Replies = std::vector<std::vector<std::uint8_t>>;

// A leader written by hand: a real declaration on the DHT and a plain ROUTER as its service
// socket. Every join it receives is counted and answered with what `script` returns for it, in
// order.
struct FakeLeader {
    using Script = std::function<Replies(const FakeLeader &, const JoinRequest &)>;

    PeerIdentity identity = PeerIdentity::generate();
    DhtNode dht{identity};
    zmq::context_t context;
    zmq::socket_t router{context, zmq::socket_type::router}; // used by `thread` only, once it runs
    std::string endpoint;
    std::atomic<int> joins{0};
    std::atomic<bool> done{false};
    std::thread thread;

    explicit FakeLeader(Script script);
    ~FakeLeader();
    FakeLeader(const FakeLeader &) = delete;
    FakeLeader &operator=(const FakeLeader &) = delete;

    // Its declaration for (epoch, schema) in run "mm-test", gathering until `deadline`.
    bool declare(long epoch, const std::string &schema, double deadline);
    // As BEGIN lists it: reachable, so that the group has a reducer.
    [[nodiscard]] GroupMember asMember() const;

  private:
    void serve(const Script &script);
};

// A client-mode peer (it only asks, never leads) whose DHT node knows the fake leader's; `bans`
// as Matchmaker takes it (null: none).
[[nodiscard]] std::unique_ptr<Peer> followerOf(FakeLeader &leader, const MatchmakingOptions &options,
                                               std::shared_ptr<BanList> bans = nullptr);

struct Outcome {
    bool finished = false; // formGroup returned within its bound (window + 2 request timeouts) + 10 s
    std::optional<FormedGroup> group;
    std::string why;
    std::string thrown; // what escaped formGroup, if anything
};

// formGroup for (epoch, "s") on a thread, so that neither an exception nor a search that does not
// end takes the test down: past the bound it is stopped and reported as not finished.
[[nodiscard]] Outcome formGroupGuarded(Matchmaker &m, const MatchmakingOptions &o, long epoch = 3);

} // namespace dedloc::test
