// The step metrics a monitor records (monitor/SwarmMetricsRecorder.h): the payload of a signed
// metrics record, whatever its signer put there. The recorder writes no file here (empty paths)
// but keeps its per-peer state across inputs, as a monitor does across reads.
#include "FuzzFixtures.h"
#include "FuzzTargets.h"

#include "monitor/SwarmMetricsRecorder.h"

namespace dedloc::fuzz {

int fuzzMetricsRecord(const std::uint8_t *data, std::size_t size)
{
    static SwarmMetricsRecorder recorder{std::filesystem::path()};
    SignedRecord record;
    record.peerId = size > 0 && (data[0] & 1) ? "0123456789abcdef0123456789abcdef" : "fedcba9876543210fedcba9876543210";
    record.time = Now;
    record.expiresAt = Now + 60.0;
    record.payload.assign(reinterpret_cast<const char *>(data), size);
    (void)recorder.record({record});
    (void)recorder.takeChangedCredit(16);
    return 0;
}

} // namespace dedloc::fuzz
