#pragma once
// What a member keeps of one all-reduce round that checks results (AllReduceOptions::
// checkResults), so that once the group's average digest is known it can sketch the round for
// the result check (averaging/ResultCheck.h): the encoded PART payloads it sent and the RESULTs
// it received with their headers' radius and counted weight (sender side), and as a reducer its
// own raw values of its shard, every sender's PART payloads, each block's radius, counted
// weights and total, and the RESULT payloads it applied itself. Payloads are ZeroMQ messages kept
// by reference (no copy of their bytes); they are decoded only when sketched.
//
// Blocks: the reducer's aggregation blocks (PartReducer.h): `blockParts` consecutive parts of a
// shard's layout (PartSender.h pieces()).
//
// Threads: filled by the thread that runs the round; sketch() may run on any one thread after
// the round (const). Errors: sketch() throws dedloc::Error only if a kept payload no longer
// decodes (it cannot: each was decoded once when kept).
#include "averaging/ResultCheck.h"
#include "compress/Compression.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace zmq {
class message_t;
} // namespace zmq

namespace dedloc {

class RoundEvidence final {
  public:
    // `shardSizes`: elements per member's shard; `iSend`: this member sent values (weight > 0).
    RoundEvidence(std::size_t me, std::vector<std::int64_t> shardSizes, std::size_t partElements,
                  std::size_t blockParts, Compression codec, bool iSend);
    ~RoundEvidence();
    RoundEvidence(const RoundEvidence &) = delete;
    RoundEvidence &operator=(const RoundEvidence &) = delete;

    // Sender side: the payload of PART `part` sent to reducer `shard`, and a RESULT received.
    void keepSent(std::size_t shard, std::uint32_t part, zmq::message_t &payload);
    void keepResult(std::size_t shard, std::uint32_t part, double radius, double counted, double total,
                    zmq::message_t &payload);
    // Reducer side: this member's raw values of its shard (before any result replaced them), a
    // sender's PART payload, one reduced block, and a RESULT payload applied here.
    void keepOwnValues(std::uint64_t offset, std::span<const float> values); // at `offset` in the shard
    void keepPart(std::size_t sender, std::uint32_t part, zmq::message_t &payload);
    void keepBlock(std::uint32_t block, double radius, std::vector<double> counted, double total);
    void keepOwnResult(std::uint32_t part, zmq::message_t &payload);

    // The sketches of the round under the seed of `digest` (the group average's updateDigest).
    [[nodiscard]] RoundSketches sketch(const std::string &digest) const;

  private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace dedloc
