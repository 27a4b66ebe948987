#pragma once
// An averaged step as the group's members applied it, kept so that a peer that is behind can
// replay it instead of downloading the whole state (docs/PROTOCOL.md "State sharing").
//
// After a complete gradient round every member holds the same averaged gradient: each element
// is the decoding of one encoded piece, a RESULT from another reducer or the member's own
// reduced part (averaging/PartReducer.h applies exactly what it sends). Those encodings, kept as
// they were on the wire, are the update: decoding them gives the averaged gradient bit for bit,
// and Trainer::applyAveragedStep of it on the state of `epoch` gives the state of epoch + 1 that
// every member of the group holds. A compressed round's update is as small as its results (the
// tiny run: about 1.3 MB at 8 bits a value against 15 MB of state).
//
// Shapes: `pieces` are (offset, count) ranges of the gradient, sorted, tiling [0, elements)
// without gaps or overlaps; `bytes` is their encodings in that order, encodedLength(codec, ...)
// each. Threads: plain values. Errors: ProtocolError for an update whose pieces
// do not tile or whose bytes do not match them (net/WireMessage.h).
#include "compress/Compression.h"

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace dedloc {

// One encoded piece of a round's averaged values, as captured during the round.
struct EncodedPiece {
    std::uint64_t offset = 0; // first element in the whole vector
    std::uint64_t count = 0;
    std::vector<std::uint8_t> bytes; // one encoding of `count` values
};

struct AveragedUpdate {
    long epoch = 0;          // the step was taken at this epoch: applying it gives epoch + 1
    long batchSamples = 0;   // the global batch the step was applied for
    Compression codec = Compression::None; // of the round's RESULTs (resultCodec())
    std::uint64_t elements = 0;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> pieces; // (offset, count)
    std::vector<std::uint8_t> bytes;
};

// The update of a round from its captured pieces (any order); nothing when they do not cover
// every element exactly once (an incomplete round: some shard kept local values).
[[nodiscard]] std::optional<AveragedUpdate> assembleUpdate(long epoch, long batchSamples, Compression codec,
                                                           std::uint64_t elements, std::vector<EncodedPiece> pieces);

// What can be checked of an update before its bytes arrive (a header read with `bytes` sized but
// not filled): throws ProtocolError unless the pieces tile [0, elements) and bytes.size() is
// their encodings' total size (for a variable-length codec, within the least and the most their
// encodings can take).
void checkUpdatePieces(const AveragedUpdate &update);
// checkUpdatePieces, and for a variable-length codec that `bytes` is exactly one encoding of each
// piece in turn (read from its block counts). Checks only the layout, before anything is decoded.
void checkUpdateLayout(const AveragedUpdate &update);

// The averaged gradient (update.elements floats); throws ProtocolError for a bad layout or a
// non-finite value.
[[nodiscard]] std::vector<float> decodeUpdate(const AveragedUpdate &update);

} // namespace dedloc
