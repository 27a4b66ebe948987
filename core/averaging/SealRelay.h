#pragma once
// Relaying a seal (docs/PROTOCOL.md "Merging groups", step 5). DHT reads do not reach every peer
// alike: on a loaded swarm a peer may read the epoch's group records but not the seal that the
// others merge, and would then merge another set (another model). Such a peer asks members of
// the groups it saw (`seal?` on their service sockets) for the records their merge rests on:
// the seal's record and, for each group it names, records of members claiming exactly that
// group's weight and digest, each as the signed DHT value the member read (SignedRecord::value).
// The asker verifies every value as its own DHT read would (signature, key, expiry) and adds
// the records to its own: a member can withhold a seal but not forge one, and the asker still
// merges only a seal that its records, relayed ones included, confirm.
// Frame: a CBOR array of at most MaxRelayedRecords byte strings of at most MaxRelayedValueBytes.
// Threads: pure functions; askForSeal() blocks its caller at most `timeout` seconds.
// Errors: parseRelayedRecords() throws ProtocolError; askForSeal() returns nothing with a reason.
#include "averaging/SwarmMessages.h"
#include "net/DhtNode.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dedloc {

class DataPlaneSecurity;

inline constexpr std::size_t RelayedRecordsPerGroup = 4;
inline constexpr std::size_t MaxRelayedRecords = 1 + RelayedRecordsPerGroup * MaxSealGroups;
inline constexpr std::size_t MaxRelayedValueBytes = 64 * 1024; // as DhtNode::fetch keeps
inline constexpr std::size_t MaxRelayFrameBytes = 2 * 1024 * 1024;

[[nodiscard]] std::vector<std::uint8_t> encodeRelayedRecords(const std::vector<std::string> &values);
// The values of a relay frame, unverified. Throws ProtocolError for anything but an array of at
// most MaxRelayedRecords byte strings of 1 .. MaxRelayedValueBytes bytes.
[[nodiscard]] std::vector<std::string> parseRelayedRecords(std::span<const std::uint8_t> frame);

// The signed values of the records `seal` rests on in `book` (records by peer id): the seal's
// own record, then for each group it names, in its order, up to RelayedRecordsPerGroup records
// that claim exactly the group's weight and digest. Records without a signed value are skipped.
[[nodiscard]] std::vector<std::string> sealRelayValues(const GroupRecord &seal,
                                                       const std::map<std::string, GroupRecord> &book);

// Asks `member`'s service socket for its relay of `epoch` (seal? {run, e}) and returns the values
// that verify as records under `key` at `now` (net/DhtNode.h verifySignedRecord, `skew` seconds
// of clock skew allowed). Nothing, with `*why`, when it refuses (no seal taken yet), is silent
// for `timeout` seconds, or answers a malformed frame. Connects as a CURVE client to the
// member's record key when `security` is given.
[[nodiscard]] std::vector<SignedRecord> askForSeal(const GroupRecord &member, const std::string &runId, long epoch,
                                                   const std::string &key, double timeout, double skew,
                                                   const std::atomic<bool> &stop,
                                                   const std::shared_ptr<const DataPlaneSecurity> &security,
                                                   std::string *why);

} // namespace dedloc
