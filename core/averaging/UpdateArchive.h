#pragma once
// The averaged updates a state donor serves, and their wire form (docs/PROTOCOL.md "State
// sharing": update?, upart?). A peer that is behind the swarm by a few epochs but holds the
// swarm's state of an earlier epoch replays the updates of the epochs it missed
// (averaging/AveragedUpdate.h) instead of downloading the whole state: each costs its downlink
// the round's compressed average, not the state.
//
// The archive keeps one chain of consecutive epochs, the newest MaxUpdates and at most MaxBytes
// in all: an update that does not follow the last one starts a new chain (the state in between
// came from elsewhere: a download, a state round that changed it). An update whose header would
// exceed a service message (MaxServiceHeaderBytes: a model of some thousands of parts) is not kept.
//
// Beside the chain it keeps the last MaxGroupUpdates rounds' own group averages by group id: what
// the other groups of the same epoch fetch to merge (averaging/GroupMerge.h). A merged step's
// state is not the group's update, so those are served only on request by group id.
//
// Requests and answers (CBOR maps like every service message):
//   update? {run, e, g?} -> update {e, b, z, n, s, m, p}: epoch, batch samples, codec name,
//                           elements, bytes, chunks of UpdateChunkBytes, pieces [[offset, count]...]
//                           or refuse {why} when the epoch (or the group g's round) is not kept
//   upart? {e, k, g?}    -> upart {e, k} with chunk k of the bytes as a second frame
// Threads: UpdateArchive is not thread-safe (PeerService guards it with its mutex); the JSON
// helpers are pure. Errors: updateFromHeader throws ProtocolError (net/WireMessage.h).
#include "averaging/AveragedUpdate.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>

namespace dedloc {

inline constexpr std::size_t UpdateChunkBytes = 512 * 1024;

[[nodiscard]] nlohmann::json updateHeaderToJson(const AveragedUpdate &update);
// The update an `update` answer describes, with `bytes` sized (zeros) for its chunks; checks the
// element count against `expectedElements` (the model's parameters), the codec, the layout
// (checkUpdatePieces: the bytes are checked when decoded) and the chunk count before allocating.
[[nodiscard]] AveragedUpdate updateFromHeader(const nlohmann::json &header, long expectedEpoch,
                                              std::uint64_t expectedElements);
[[nodiscard]] std::uint32_t updateChunks(std::size_t bytes);

struct UpdateAnswer {
    std::string type;                // "update", "upart" or "refuse"
    nlohmann::json fields;
    std::span<const std::uint8_t> data; // upart's chunk (points into the kept update)
};

class UpdateArchive final {
  public:
    static constexpr std::size_t MaxUpdates = 32;
    static constexpr std::size_t MaxBytes = 256ULL << 20;
    static constexpr std::size_t MaxGroupUpdates = 4;

    void add(std::shared_ptr<const AveragedUpdate> update);
    // Keeps a round's group average under its group id (at most 64 characters) for merging; the
    // oldest of more than MaxGroupUpdates is dropped.
    void addGroupUpdate(const std::string &groupId, std::shared_ptr<const AveragedUpdate> update);
    void clear() { m_chain.clear(); }
    // The epochs kept: [first, end); first == end when none.
    [[nodiscard]] long first() const { return m_chain.empty() ? 0 : m_chain.front()->epoch; }
    [[nodiscard]] long end() const { return m_chain.empty() ? 0 : m_chain.back()->epoch + 1; }
    // Answers an update? or upart? request (its run already checked); throws ProtocolError for a
    // malformed one.
    [[nodiscard]] UpdateAnswer answer(const std::string &type, const nlohmann::json &request) const;

  private:
    [[nodiscard]] const AveragedUpdate *find(long epoch) const;
    [[nodiscard]] const AveragedUpdate *findGroup(long epoch, const nlohmann::json &groupId) const;
    std::deque<std::shared_ptr<const AveragedUpdate>> m_chain; // consecutive epochs, oldest first
    std::deque<std::pair<std::string, std::shared_ptr<const AveragedUpdate>>> m_groups; // oldest first
    std::size_t m_bytes = 0;
};

} // namespace dedloc
