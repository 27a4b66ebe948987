#pragma once
// A member of a butterfly all-reduce round (core/averaging/ButterflyAllReduce.h) written by hand,
// for tests of what honest members do with one that breaks the protocol on its own authenticated
// links. It binds its own CURVE ROUTER (the endpoint the group must list for it), connects its
// own DEALERs to the honest reducers, sends the PARTs it is given whatever they claim, and
// answers every PART for its shard with a scripted RESULT.
//
// Threads: set it up and read it on the test's thread; start() runs it on a thread of its own
// until stop() (or destruction).
#include "net/PeerIdentity.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dedloc::test {

// One PART as the rogue sends it; nothing is checked.
struct RoguePart {
    std::uint32_t reducer = 0; // the shard (= the reducer's index) it goes to
    std::uint32_t part = 0;
    std::uint32_t parts = 1;
    std::uint64_t offset = 0;  // in that shard
    std::vector<float> values; // its payload, uncompressed
    double weight = 0.0;       // the header's sender weight
    std::string rawHeader;     // when set, sent as the header frame instead of the fields above
};

// What it answers to each PART of its own shard: a RESULT of the PART's size, every element
// `value` (NaN allowed), the header claiming a total weight of `weight`.
struct RogueAnswer {
    float value = 0.0F;
    double weight = 0.0;
};

class RogueMember final {
  public:
    // Member `index` of a group of `members` (id `groupId`, no compression) whose own shard
    // holds `shardElements`, cut into parts of at most `partElements`.
    RogueMember(const PeerIdentity &identity, std::string groupId, std::uint32_t index, std::uint32_t members,
                std::uint64_t shardElements, std::uint64_t partElements);
    ~RogueMember();
    RogueMember(const RogueMember &) = delete;
    RogueMember &operator=(const RogueMember &) = delete;

    // Its ROUTER's endpoint (CURVE server with its identity's key).
    [[nodiscard]] std::string endpoint() const;
    // A DEALER to member `member`'s ROUTER, authenticating it by `serverKey`; before start().
    void connect(std::uint32_t member, const std::string &endpoint, const std::array<unsigned char, 32> &serverKey);
    // Sends `parts`, then answers every PART for its shard with `answer` (none: stays silent).
    void start(std::vector<RoguePart> parts, std::optional<RogueAnswer> answer);
    void stop();
    // The total weights of the RESULTs the honest reducers sent back to it, in arrival order;
    // read after stop().
    [[nodiscard]] std::vector<double> resultWeights() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace dedloc::test
