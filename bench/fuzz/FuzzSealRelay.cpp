// A seal relay (averaging/SealRelay.h): the frame a member answers `seal?` with, a CBOR array of
// signed DHT values, each then verified as a DHT read would and parsed as a group record.
#include "FuzzFixtures.h"
#include "FuzzTargets.h"

#include "averaging/SealRelay.h"
#include "averaging/SwarmMessages.h"
#include "net/DhtNode.h"

namespace dedloc::fuzz {

int fuzzSealRelay(const std::uint8_t *data, std::size_t size)
{
    std::vector<std::string> values;
    try {
        values = parseRelayedRecords(std::span(data, size));
    } catch (const ProtocolError &) {
        return 0;
    }
    for (const auto &v : values) {
        const auto record =
            verifySignedRecord(GroupsKey, std::span(reinterpret_cast<const std::uint8_t *>(v.data()), v.size()), Now, 3.0);
        if (!record)
            continue;
        try {
            (void)parseGroupRecord(*record);
        } catch (const ProtocolError &) {
        }
    }
    return 0;
}

} // namespace dedloc::fuzz
