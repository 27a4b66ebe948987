#pragma once
// Which versions of the run's manifest the peers of a run train under. The swarm's DHT keys and
// service messages name the run id and the manifest's training fingerprint together
// (run/RunManifest.h trainingFingerprint), so peers on two versions never count each other's
// samples, group or download state across them. Each peer also publishes one small record under
// runKey(run id, "versions"), a key of the run id alone, so that both sides learn that the other
// exists and can tell their volunteer (docs/PROTOCOL.md "Manifest versions").
//
// Payload: {"m": fingerprint (16 lowercase hex digits), "e": the peer's epoch (0 to 2^40)}.
// Threads: pure functions, thread-safe. Errors: parseVersionRecord throws ProtocolError
// (net/WireMessage.h); otherVersions skips what it cannot parse.
#include "net/DhtNode.h"

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace dedloc {

struct VersionRecord {
    std::string peerId;      // from the verified signed record
    std::string fingerprint; // "m"
    long epoch = 0;          // "e"
};

[[nodiscard]] std::string encodeVersionRecord(const std::string &fingerprint, long epoch);
[[nodiscard]] VersionRecord parseVersionRecord(const SignedRecord &record);

// The peers of the records (this peer's own left out) whose fingerprint is not `mine`.
struct OtherVersions {
    std::size_t peers = 0;                            // distinct peers on another version
    std::map<std::string, std::size_t> byFingerprint; // at most MaxFingerprints entries
    long highestEpoch = -1;                           // the highest epoch they claim; -1: none
    static constexpr std::size_t MaxFingerprints = 8; // more are counted in `peers` only
    bool operator==(const OtherVersions &) const = default;
};
[[nodiscard]] OtherVersions otherVersions(const std::vector<SignedRecord> &records, const std::string &mine,
                                          const std::string &selfPeerId);

// One line for the volunteer, "" when every peer holds `mine`: how many peers train under
// another version and what to do about it.
[[nodiscard]] std::string describeOtherVersions(const OtherVersions &others, const std::string &mine, long myEpoch);

} // namespace dedloc
