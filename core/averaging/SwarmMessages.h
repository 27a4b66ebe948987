#pragma once
// The swarm's control messages (docs/PROTOCOL.md): the payloads of its DHT records and the
// messages of a peer's service socket (matchmaking and state download).
//
// DHT payloads are small JSON objects inside signed records (net/DhtNode.h), keyed by run id:
//   runKey(run, "progress")            ProgressRecord of every peer (DeDLOC section 3.1)
//   runKey(run, "mm/ring/<e>/<schema>") matchmaking declarations of peers looking for a group
//   runKey(run, "donors")              state-donor adverts (epoch = priority)
//   runKey(run, "metrics")             each peer's latest step metrics (for the monitor)
//   runKey(run, "groups/ring/<e>")     each group member's GroupRecord (averaging/GroupMerge.h)
//   runKey(run, "checks/ring/<e>/<s>") each member's CheckRecord of a round that checks results
//                                      (averaging/SketchRecord.h checksKey)
// where <e> is the epoch modulo EpochKeyRing (groupsKey, matchmakingKey below; "ring/" keeps
// them apart from the per-epoch keys of releases before service protocol version 4).
// Service messages travel between a DEALER and a peer's service ROUTER as ZeroMQ multipart:
// one CBOR header frame (<= MaxServiceHeaderBytes) and, for state parts, one raw fp32 frame.
//   join   {run, e: epoch, s: schema, p: peer id, k: public key (64 hex), a: all-reduce
//           endpoint, b: bandwidth, c: client mode, x: sender, r: repair, n: peers it
//           expects (optional)}                                  follower -> leader
//   accept {d: leader's deadline} | refuse {why}                 leader -> follower
//   begin  {g: group id, e: epoch, m: [{p, k, a, b, x, z, r}...]}  leader -> follower
//           z: the member's shard share out of ShardShareTotal (averaging/LoadBalancing.h); the
//           shares sum to ShardShareTotal and a client-mode member (a = "") has none;
//           r: the member asked for repair (the group then also averages the state)
// A public key k (Ed25519, 64 hex digits) must derive to the peer id p beside it; records carry
// their signer's key already (net/DhtNode.h), so declarations and donor adverts take it from there.
// Progress payloads may carry k: the peer's access token (closed runs).
//   disband {why, l: leader to ask instead {p, k, a, x} (optional)} leader -> follower
//   state? {run}  -> state {i: snapshot id, e: epoch, n: elements, k: parts, q: part elements}
//   part?  {i, k: part} -> part {i, k} + frame of q (last: the rest) fp32 little-endian values
//   reach? {p, k, a: service endpoint} -> reach {ok, sure, at, why}   (averaging/Reachability.h)
//   ping {} -> pong {}                                            (the dial-back's probe)
//   seal? {run, e: epoch} -> seal {e, n: values} + frame: the signed DHT records of the seal this
//           peer merged at e and of the groups it names (averaging/SealRelay.h)
// Every parser checks presence, types and ranges before anything is allocated and throws
// ProtocolError (net/WireMessage.h) with the reason. Pure functions; thread-safe.
// The format depends on no algorithm: the tracker, the matchmaker and the all-reduce include it.
#include "net/DhtNode.h"
#include "net/WireMessage.h"
#include "averaging/PeerRole.h"

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dedloc {

inline constexpr std::size_t MaxServiceHeaderBytes = 16 * 1024;
inline constexpr std::size_t MaxGroupMembers = 256;
// The denominator of the shard shares in BEGIN (2^20: one share is about a millionth of a vector).
inline constexpr std::int64_t ShardShareTotal = std::int64_t{1} << 20;
inline constexpr int ServiceProtocolVersion = 9; // 2: BEGIN carries the leader's shard shares; 3: parts of 16 Ki
                                                 // elements; 4: capped shares checked, keys on a ring of epochs;
                                                 // 5: results checked (RESULT "k" and "u", group records' "c");
                                                 // 6: sketches in check records of their own;
                                                 // 7: progress records in shards (ProgressShards.h);
                                                 // 8: parts of 64 Ki elements in one-byte codecs;
                                                 // 9: CenteredClip's pull weights (pullWeight)

// --- DHT payloads -------------------------------------------------------------------------

// The keys of one epoch come from a ring of EpochKeyRing epochs: OpenDHT keeps every key it put
// or got for an hour after its last use, so a key per epoch grew a node's memory with the steps
// (about 2 900 searches per 10 minutes at 2.4 steps a second). Every payload under them says its
// epoch and readers keep only the epoch they read for; a peer's record of epoch e + EpochKeyRing
// replaces its record of e (one value per peer and key), which no reader needs by then.
inline constexpr long EpochKeyRing = 1024;
[[nodiscard]] inline std::string groupsKey(const std::string &runId, long epoch)
{
    return runKey(runId, "groups/ring/" + std::to_string(epoch % EpochKeyRing));
}
[[nodiscard]] inline std::string matchmakingKey(const std::string &runId, long epoch, const std::string &schema)
{
    return runKey(runId, "mm/ring/" + std::to_string(epoch % EpochKeyRing) + "/" + schema);
}

// A peer's progress toward the current global batch (DeDLOC section 3.1), as published under
// runKey(run, "progress") and kept by averaging/ProgressTracker.h.
struct ProgressRecord {
    std::string peerId;
    long epoch = 0;                 // optimizer steps this peer has applied
    long samplesAccumulated = 0;    // since its last step
    double samplesPerSecond = 0.0;  // exponential moving average (alpha ~0.1)
    double time = 0.0;              // when the record was made (sender's clock, seconds)
    double expiresAt = 0.0;         // time + ~60 s: a silent peer drops out by itself
    bool clientMode = false;
    PeerRole role = PeerRole::Trainer;
    bool paused = false;            // a paused peer reports 0 samples and 0 samples/s
    // Joins averaging groups: trainers and auxiliaries always, a monitor when it reduces shards
    // (dedloc-lead serve does by default). Payload "a"; absent: true unless a monitor.
    bool averages = true;
    std::string accessToken;        // closed runs: the peer's access token ("" in open runs)
    // Downloading the swarm's state (payload "y"; absent: false): it joins no group meanwhile.
    bool syncing = false;
    // The state this peer serves as a donor (payload "se", "sh"; absent: none): its epoch and
    // the SHA-256 of its values (StateInfo::digest, 64 hex digits). Signed with the record, it
    // vouches for that state to joiners (averaging/StateVouching.h).
    long stateEpoch = -1;
    std::string stateDigest;
    // A monitor: the highest epoch it saw the trainers corroborate (payload "f", sent only when
    // above `epoch`; absent: 0), which it vouches for although its own state lags
    // (ProgressTracker::follow).
    long followedEpoch = 0;
    // The shards its publisher's swarm view uses (averaging/ProgressShards.h; payload "h", sent
    // only when above 1; absent: 1), a power of two up to 1024.
    int shardCount = 1;
};

[[nodiscard]] std::string encodeProgress(const ProgressRecord &record);
// peerId, time and expiresAt come from the verified signed record, not from the payload.
[[nodiscard]] ProgressRecord parseProgress(const SignedRecord &record);

struct Declaration {
    std::string peerId;
    long epoch = 0;
    std::string schema;             // hex digest of the averaged tensors' layout
    std::string serviceEndpoint;    // "" in client mode
    double expiresAt = 0.0;         // the leader's deadline, Unix seconds
    bool clientMode = false;
    std::array<unsigned char, 32> publicKey{}; // the record's signer: the service socket's CURVE key
};
[[nodiscard]] std::string encodeDeclaration(const Declaration &declaration);
[[nodiscard]] Declaration parseDeclaration(const SignedRecord &record);
// The leader a disbanding leader merges into, as its DISBAND's "l" field {p, k, a, x}: its
// followers' views of the DHT may lack that declaration. Read back for the follower's own epoch and
// schema; the key must derive to the peer id and the endpoint be a TCP one (ProtocolError).
[[nodiscard]] nlohmann::json suggestedLeaderToJson(const Declaration &leader);
[[nodiscard]] Declaration suggestedLeaderFromJson(const nlohmann::json &field, long epoch, const std::string &schema);

struct DonorAdvert {
    std::string peerId;
    std::string serviceEndpoint;
    long epoch = 0;
    std::array<unsigned char, 32> publicKey{}; // the record's signer: the service socket's CURVE key
    // Its state may differ from the swarm's (it stepped alone; payload "d", absent: false): a
    // peer repairing its own state does not take it, one that is behind takes it last.
    bool mayDiffer = false;
};
[[nodiscard]] std::string encodeDonorAdvert(const DonorAdvert &advert);
[[nodiscard]] DonorAdvert parseDonorAdvert(const SignedRecord &record);

// One member's word on its group's round, the payload under groupsKey(run, epoch).
struct GroupRecord {
    std::string peerId;          // the record's signer
    std::array<unsigned char, 32> publicKey{};
    long epoch = 0;              // "e"
    std::string groupId;         // "g", at most 64 characters
    long weight = 0;             // "w": samples of the group's batch (AllReduceReport::groupWeight)
    std::size_t members = 0;     // "n", 2 .. MaxGroupMembers
    std::string digest;          // "h": updateDigest of the group's average, 64 hex digits;
                                 // "": the group has formed and its round is running
    std::string serviceEndpoint; // "a": where it serves the average; "" (client mode): nowhere
    // "s" (optional): the set of groups this member proposes that every peer of the epoch merge,
    // [[g, w, h]...] with at most MaxSealGroups entries (GroupMerge.h, "sealing the merge").
    struct SealEntry {
        std::string groupId;
        long weight = 0;
        std::string digest;
        bool operator==(const SealEntry &) const = default;
    };
    std::vector<SealEntry> seal;
    // "x" (optional, true): its round ended here without an average (a shard never came back);
    // then no digest, no seal. Once too few members are left to agree on an average, and none
    // claims one, readers no longer wait for the group (GroupMerge.h groupViews).
    bool ended = false;
    std::string signedValue;     // the signed DHT value it was read from (SignedRecord::value);
                                 // "" for one built here and not yet signed
};
inline constexpr std::size_t MaxSealGroups = 256;
[[nodiscard]] std::string encodeGroupRecord(const GroupRecord &record);
// Checks every field (ProtocolError); peerId and publicKey come from the verified record.
[[nodiscard]] GroupRecord parseGroupRecord(const SignedRecord &record);

// --- Service messages ---------------------------------------------------------------------

struct JoinRequest {
    std::string runId;
    long epoch = 0;
    std::string schema;
    std::string peerId;
    std::string allReduceEndpoint;  // "" in client mode
    double bandwidth = -1.0;
    bool clientMode = false;
    bool sender = true;             // false: auxiliary (reduces, sends no gradients)
    std::array<unsigned char, 32> publicKey{}; // Ed25519 identity key; its peer id must be peerId
    // Its parameters may differ from the swarm's (it stepped alone, or a round of its left a
    // shard at local values): the group also averages the state this step ("r").
    bool repair = false;
    // Peers it expects at this epoch, itself included ("n"; absent: 0, unknown): a leader whose
    // view of the DHT misses some (behind NAT) waits for the larger count until its deadline.
    std::size_t expected = 0;
    // The SHA-256 of its training state at this epoch (Trainer::stateFlat, 64 hex digits; "d"),
    // sent when the group's step is one of the periodic state rounds and its state is of this
    // epoch ("" otherwise): GroupInfo::statesAgree.
    std::string stateDigest{};
};

// One member of an averaging group, as the leader's BEGIN lists it and the butterfly all-reduce
// (averaging/ButterflyAllReduce.h) uses it.
struct GroupMember {
    std::string peerId;
    std::string endpoint;    // ZeroMQ endpoint of its ROUTER ("tcp://127.0.0.1:5555"); empty: client mode
    double bandwidth = -1.0; // for shard sizes; < 0 unknown, 0 reduces nothing (forced for client mode)
    double weight = 0.0;     // samples contributed; 0: auxiliary (averages only)
    // Its Ed25519 identity key (the peer id derives from it): the CURVE server key of its ROUTER
    // and the key its own connections authenticate with. Required when the endpoint is secured.
    std::array<unsigned char, 32> publicKey{};
    // Its shard share, decided by the group's leader (averaging/LoadBalancing.h shardShares; 0 for
    // client mode). A group whose shares are all 0 (tests, benchmarks: no leader) lays out its
    // shards from the bandwidths instead.
    std::int64_t share = 0;
    // It asked for repair (JoinRequest::repair): its parameters may differ from the swarm's. In
    // the state round it then sends with weight 0, taking the others' state ("r").
    bool repair = false;
    std::string stateDigest{}; // as it joined (JoinRequest::stateDigest; "d")
};

struct GroupInfo {
    std::string groupId;
    long epoch = 0;
    std::vector<GroupMember> members;  // weight 1 = sender, 0 = auxiliary
    // Whether the group averages parameters and optimizer state after the gradients: some
    // member asked for repair (GroupMember::repair).
    [[nodiscard]] bool stateRound() const;
    // Whether every member joined with the same state digest (none empty, none asking for
    // repair): after a complete round of the same average their states are still equal, and a
    // periodic state round would move the whole state to change nothing. A member without a
    // digest (a monitor or an auxiliary that does not hold the state) keeps the round: it takes
    // the state from it.
    [[nodiscard]] bool statesAgree() const;
};

struct StateInfo {
    std::string snapshotId;
    long epoch = 0;
    std::uint64_t elements = 0;
    std::uint32_t parts = 0;
    std::uint64_t partElements = 0;
    // SHA-256 of the snapshot's values (their fp32 bytes), 64 hex digits; "" when not given. Two
    // donors offering the same digest hold the same state: a download resumes across them, and
    // checks what it assembled against it.
    std::string digest;
};

[[nodiscard]] std::vector<std::uint8_t> encodeServiceMessage(const std::string &type, const nlohmann::json &fields);
// Checks size, CBOR, version and a known type; returns the map (with "t" = type).
[[nodiscard]] nlohmann::json parseServiceMessage(std::span<const std::uint8_t> bytes);

[[nodiscard]] nlohmann::json joinToJson(const JoinRequest &request);
[[nodiscard]] JoinRequest joinFromJson(const nlohmann::json &message);
[[nodiscard]] nlohmann::json groupToJson(const GroupInfo &group);
[[nodiscard]] GroupInfo groupFromJson(const nlohmann::json &message);
// Asks a reachable peer to connect back to `serviceEndpoint` (averaging/Reachability.h).
struct ReachRequest {
    std::string peerId;
    std::array<unsigned char, 32> publicKey{}; // Ed25519 identity key: the endpoint's CURVE key
    std::string serviceEndpoint;
};
[[nodiscard]] nlohmann::json reachRequestToJson(const ReachRequest &request);
[[nodiscard]] ReachRequest reachRequestFromJson(const nlohmann::json &message);

[[nodiscard]] nlohmann::json stateInfoToJson(const StateInfo &info);
// `expectedElements`: the requester's own state size; anything else is refused before the
// download allocates.
[[nodiscard]] StateInfo stateInfoFromJson(const nlohmann::json &message, std::uint64_t expectedElements);

// A field of a peer's reply read without trusting its type (a hostile peer may send any): the
// text, or `fallback` when the field is missing or not text; the number likewise (finite only).
[[nodiscard]] std::string textOr(const nlohmann::json &message, const char *key, const std::string &fallback);
[[nodiscard]] double numberOr(const nlohmann::json &message, const char *key, double fallback);
[[nodiscard]] long integerOr(const nlohmann::json &message, const char *key, long fallback);

// Hex digest (16 characters) of a tensor layout description; peers only group with equal ones.
[[nodiscard]] std::string schemaHash(const std::string &runId, long long elements, const std::string &what);

} // namespace dedloc
