#include "averaging/AveragedUpdate.h"

#include "net/WireMessage.h"
#include "util/Error.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace dedloc {

namespace {

// Whether `bytes` is one encoding of `count` values, by its length.
bool encodesExactly(Compression codec, std::span<const std::uint8_t> bytes, std::uint64_t count)
{
    try {
        return encodedLength(codec, bytes, count) == bytes.size();
    } catch (const Error &) {
        return false;
    }
}

} // namespace

std::optional<AveragedUpdate> assembleUpdate(long epoch, long batchSamples, Compression codec, std::uint64_t elements,
                                             std::vector<EncodedPiece> pieces)
{
    std::sort(pieces.begin(), pieces.end(), [](const EncodedPiece &a, const EncodedPiece &b) { return a.offset < b.offset; });
    AveragedUpdate u{epoch, batchSamples, codec, elements, {}, {}};
    std::uint64_t next = 0;
    for (auto &p : pieces) {
        if (p.offset != next || p.count == 0 || !encodesExactly(codec, p.bytes, p.count))
            return std::nullopt;
        next += p.count;
        u.pieces.emplace_back(p.offset, p.count);
        u.bytes.insert(u.bytes.end(), p.bytes.begin(), p.bytes.end());
        std::vector<std::uint8_t>().swap(p.bytes);
    }
    if (next != elements)
        return std::nullopt;
    return u;
}

void checkUpdatePieces(const AveragedUpdate &update)
{
    std::uint64_t next = 0, least = 0, most = 0;
    for (const auto &[offset, count] : update.pieces) {
        if (offset != next || count == 0 || count > update.elements - next)
            throw ProtocolError("update pieces do not tile the gradient: a piece at " + std::to_string(offset)
                                + " where " + std::to_string(next) + " was due");
        next += count;
        least += leastEncodedBytes(update.codec, count);
        most += encodedBytes(update.codec, count);
    }
    if (next != update.elements)
        throw ProtocolError("update pieces cover " + std::to_string(next) + " of " + std::to_string(update.elements)
                            + " elements");
    if (update.bytes.size() < least || update.bytes.size() > most)
        throw ProtocolError("update carries " + std::to_string(update.bytes.size()) + " bytes; its pieces take "
                            + (least == most ? std::to_string(least)
                                             : "from " + std::to_string(least) + " to " + std::to_string(most)));
}

void checkUpdateLayout(const AveragedUpdate &update)
{
    checkUpdatePieces(update);
    if (!isVariableLength(update.codec))
        return;
    std::size_t at = 0;
    for (const auto &[offset, count] : update.pieces) {
        try {
            at += encodedLength(update.codec, std::span(update.bytes).subspan(at), count);
        } catch (const Error &e) {
            throw ProtocolError("update piece at " + std::to_string(offset) + ": " + e.what());
        }
    }
    if (at != update.bytes.size())
        throw ProtocolError("update carries " + std::to_string(update.bytes.size()) + " bytes; its pieces take "
                            + std::to_string(at));
}

std::vector<float> decodeUpdate(const AveragedUpdate &update)
{
    checkUpdateLayout(update);
    std::vector<float> out(update.elements);
    std::size_t at = 0;
    for (const auto &[offset, count] : update.pieces) {
        const auto n = encodedLength(update.codec, std::span(update.bytes).subspan(at), count);
        decode(update.codec, std::span(update.bytes).subspan(at, n), std::span(out).subspan(offset, count));
        at += n;
    }
    if (!std::all_of(out.begin(), out.end(), [](float x) { return std::isfinite(x); }))
        throw ProtocolError("update carries a non-finite value");
    return out;
}

} // namespace dedloc
