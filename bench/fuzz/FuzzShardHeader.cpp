// The data plane's header frame (net/WireMessage.h): parseShardHeader against a fixed schema.
#include "FuzzFixtures.h"
#include "FuzzTargets.h"

#include "net/WireMessage.h"

namespace dedloc::fuzz {

int fuzzShardHeader(const std::uint8_t *data, std::size_t size)
{
    static const ShardSchema schema = shardSchema();
    try {
        (void)parseShardHeader({data, size}, schema);
    } catch (const ProtocolError &) {
        // A refused header: the reducer drops the message.
    }
    return 0;
}

} // namespace dedloc::fuzz
