#pragma once
// Data-plane messages of the butterfly all-reduce (docs/PROTOCOL.md once the swarm lands).
// A message is two ZeroMQ frames: a small CBOR header (nlohmann-json's CBOR codec) and the
// compressed payload (core/compress/Compression.h). Header fields:
//   v      protocol version (1)
//   t      1 = PART (sender -> reducer: a piece of the sender's values for the reducer's shard)
//          2 = RESULT (reducer -> sender: the averaged piece)
//   g      group id (<= 64 bytes), s sender index, h shard index, p part, n parts,
//   o      offset of the piece inside the shard, c element count, w weight (samples, >= 0),
//   z      codec (manifest spelling)
//   k      (RESULTs of rounds that check results, optional) the CenteredClip radius tau of the
//          part's aggregation block, 0 to MaxHeaderRadius; absent: averaged without clipping
//   u      (RESULTs of rounds that check results) the weight the reducer counted for the
//          RESULT's receiver in that block (samples, 0 to MaxHeaderWeight; 0: not counted)
//          (averaging/ResultCheck.h)
// parseShardHeader() checks every field's presence, type and range against what the receiver
// expects BEFORE anything is allocated; a bad message raises ProtocolError with the reason and
// the caller drops it (and may ban the sender). Pure functions; thread-safe.
#include "compress/Compression.h"

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace dedloc {

class ProtocolError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

enum class MessageType : std::uint8_t { Part = 1, Result = 2 };

struct ShardHeader {
    MessageType type = MessageType::Part;
    std::string group;
    std::uint32_t sender = 0;
    std::uint32_t shard = 0;
    std::uint32_t part = 0;
    std::uint32_t parts = 1;
    std::uint64_t offset = 0;
    std::uint64_t count = 0;
    double weight = 0.0;
    Compression codec = Compression::None;
    double radius = -1.0;  // "k": -1 when absent
    double counted = -1.0; // "u": -1 when absent
};
// Bounds of "k" and "u": what no honest round exceeds, and squares stay finite in double.
inline constexpr double MaxHeaderRadius = 1e38;
inline constexpr double MaxHeaderWeight = 1e15;

// What the receiver expects; anything outside is refused.
struct ShardSchema {
    std::string group;
    std::uint32_t members = 0;        // sender < members
    std::uint64_t shardElements = 0;  // offset + count <= this
    std::uint64_t partElements = 0;   // count <= this
    Compression codec = Compression::None;
};

inline constexpr std::size_t MaxShardHeaderBytes = 1024;
// The largest frame a data-plane socket accepts (ZMQ_MAXMSGSIZE): a PART, RESULT or state part of
// up to 4 Mi fp32 elements. A peer that sends a larger frame is disconnected before it is stored.
inline constexpr std::int64_t MaxDataPlaneFrameBytes = 16LL << 20;

[[nodiscard]] std::vector<std::uint8_t> encodeShardHeader(const ShardHeader &header);
[[nodiscard]] ShardHeader parseShardHeader(std::span<const std::uint8_t> bytes, const ShardSchema &schema);

} // namespace dedloc
