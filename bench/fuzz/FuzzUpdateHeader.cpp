// Averaged updates for replay (averaging/UpdateArchive.h, AveragedUpdate.h): a donor's `update`
// answer read by updateFromHeader and decoded, and a requester's update?/upart? answered by an
// archive that keeps one update.
#include "FuzzFixtures.h"
#include "FuzzTargets.h"

#include "averaging/SwarmMessages.h"
#include "averaging/UpdateArchive.h"

namespace dedloc::fuzz {

namespace {

const UpdateArchive &archive()
{
    static const UpdateArchive kept = [] {
        std::vector<float> values(ModelElements, 0.5f);
        std::vector<EncodedPiece> pieces{{0, ModelElements, encode(Compression::Fp16, values)}};
        UpdateArchive a;
        a.add(std::make_shared<const AveragedUpdate>(
            *assembleUpdate(UpdateEpoch, 64, Compression::Fp16, ModelElements, std::move(pieces))));
        return a;
    }();
    return kept;
}

// The update's bytes come after the header in the input (the upart chunks' contents).
void readUpdate(const nlohmann::json &m, std::span<const std::uint8_t> rest)
{
    auto u = updateFromHeader(m, UpdateEpoch, ModelElements);
    for (std::size_t i = 0; i < u.bytes.size() && !rest.empty(); ++i)
        u.bytes[i] = rest[i % rest.size()];
    (void)decodeUpdate(u);
}

} // namespace

int fuzzUpdateHeader(const std::uint8_t *data, std::size_t size)
{
    // Two bytes: the header's length (little-endian); then the CBOR header; then the update's bytes.
    if (size < 2)
        return 0;
    const std::size_t headerBytes = std::min<std::size_t>(size - 2, data[0] | std::size_t{data[1]} << 8);
    const std::span<const std::uint8_t> header(data + 2, headerBytes);
    try {
        const auto m = parseServiceMessage(header);
        const auto type = m.at("t").get<std::string>();
        if (type == "update")
            readUpdate(m, {data + 2 + headerBytes, size - 2 - headerBytes});
        else if (type == "update?" || type == "upart?")
            (void)archive().answer(type, m);
    } catch (const ProtocolError &) {
        // A refused answer or request.
    }
    return 0;
}

} // namespace dedloc::fuzz
