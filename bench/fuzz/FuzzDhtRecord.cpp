// A DHT value's bytes as DhtNode::fetch reads them (net/DhtNode.h verifySignedRecord): the CBOR
// map, its key, its times and its signature, then the progress record inside. The decoder
// refuses a bad record (nullopt), never throws.
#include "FuzzFixtures.h"
#include "FuzzTargets.h"

#include "net/DhtNode.h"

#include "averaging/SwarmMessages.h"

namespace dedloc::fuzz {

int fuzzDhtRecord(const std::uint8_t *data, std::size_t size)
{
    if (size > 64 * 1024)
        return 0; // fetch() drops larger values before decoding
    const std::vector<std::uint8_t> bytes(data, data + size);
    const auto record = verifySignedRecord(DhtKey, bytes, Now, 3.0);
    if (!record)
        return 0;
    try {
        (void)parseProgress(*record);
    } catch (const ProtocolError &) {
    }
    return 0;
}

} // namespace dedloc::fuzz
