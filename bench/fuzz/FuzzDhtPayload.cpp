// The JSON payloads of signed DHT records (averaging/SwarmMessages.h): progress records,
// matchmaking declarations, donor adverts, group records (announcements, averages, seals) and
// check records (averaging/SketchRecord.h);
// manifest version records (averaging/ManifestVersions.h); and a monitor's credit records
// (monitor/CreditLedger.h, which refuses with nullopt). The record around it already verified (the
// signer's id and key are fixed here); the payload is whatever its signer chose to sign.
#include "FuzzFixtures.h"
#include "FuzzTargets.h"

#include "averaging/ManifestVersions.h"
#include "averaging/SketchRecord.h"
#include "averaging/SwarmMessages.h"
#include "monitor/CreditLedger.h"

namespace dedloc::fuzz {

int fuzzDhtPayload(const std::uint8_t *data, std::size_t size)
{
    SignedRecord record;
    record.peerId = "0123456789abcdef0123456789abcdef";
    record.time = Now;
    record.expiresAt = Now + 60.0;
    record.payload.assign(reinterpret_cast<const char *>(data), size);
    try {
        (void)parseProgress(record);
    } catch (const ProtocolError &) {
    }
    try {
        (void)parseDeclaration(record);
    } catch (const ProtocolError &) {
    }
    try {
        (void)parseDonorAdvert(record);
    } catch (const ProtocolError &) {
    }
    try {
        (void)parseVersionRecord(record);
    } catch (const ProtocolError &) {
    }
    try {
        (void)parseGroupRecord(record);
    } catch (const ProtocolError &) {
    }
    try {
        (void)parseCheckRecord(record.peerId, record.payload);
    } catch (const ProtocolError &) {
    }
    (void)creditFromJson(record.payload, record.peerId, "fedcba9876543210fedcba9876543210", Now);
    return 0;
}

} // namespace dedloc::fuzz
