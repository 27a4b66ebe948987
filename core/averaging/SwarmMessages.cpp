#include "averaging/SwarmMessages.h"

#include "security/AccessToken.h"
#include "util/Hash.h"
#include "util/JsonReader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace dedloc {

namespace {

using nlohmann::json;

constexpr std::size_t MaxIdBytes = 128;
constexpr std::size_t MaxEndpointBytes = 256;

json parseJsonPayload(const std::string &payload, const char *what)
{
    auto j = json::parse(payload, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        throw ProtocolError(std::string(what) + " payload is not a JSON object");
    return j;
}

const json &field(const json &j, const char *key)
{
    auto it = j.find(key);
    if (it == j.end())
        throw ProtocolError(std::string("missing field \"") + key + "\"");
    return *it;
}

long nonNegative(const json &j, const char *key, long max = 1L << 40)
{
    const auto &v = field(j, key);
    if (!v.is_number_integer())
        throw ProtocolError(std::string("field \"") + key + "\" is not an integer");
    const auto x = v.get<long long>();
    if (x < 0 || x > max)
        throw ProtocolError(std::string("field \"") + key + "\" = " + std::to_string(x) + " is out of range");
    return static_cast<long>(x);
}

double finite(const json &j, const char *key)
{
    const auto &v = field(j, key);
    if (!v.is_number())
        throw ProtocolError(std::string("field \"") + key + "\" is not a number");
    const auto x = v.get<double>();
    if (!std::isfinite(x))
        throw ProtocolError(std::string("field \"") + key + "\" is not finite");
    return x;
}

std::string text(const json &j, const char *key, std::size_t maxBytes)
{
    const auto &v = field(j, key);
    if (!v.is_string())
        throw ProtocolError(std::string("field \"") + key + "\" is not a string");
    auto s = v.get<std::string>();
    if (s.size() > maxBytes)
        throw ProtocolError(std::string("field \"") + key + "\" is longer than " + std::to_string(maxBytes) + " bytes");
    return s;
}

// A state digest (SHA-256, 64 lowercase hex digits) under `key`; "" when absent.
std::string stateDigestField(const json &j, const char *key)
{
    const auto d = j.contains(key) ? text(j, key, 64) : std::string();
    if (j.contains(key) && (d.size() != 64 || d.find_first_not_of("0123456789abcdef") != std::string::npos))
        throw ProtocolError("state digest is not 64 lowercase hex digits");
    return d;
}

bool flag(const json &j, const char *key)
{
    const auto &v = field(j, key);
    if (!v.is_boolean())
        throw ProtocolError(std::string("field \"") + key + "\" is not a boolean");
    return v.get<bool>();
}

std::string endpoint(const json &j, const char *key)
{
    auto e = text(j, key, MaxEndpointBytes);
    if (!e.empty() && e.rfind("tcp://", 0) != 0 && e.rfind("ipc://", 0) != 0 && e.rfind("inproc://", 0) != 0)
        throw ProtocolError(std::string("field \"") + key + "\" is not a ZeroMQ endpoint");
    return e;
}

constexpr std::size_t MaxTokenBytes = 512;

// Field "k": an Ed25519 public key as 64 hex digits whose peer id is `peerId` (so nobody can
// pair a peer id with another peer's key, or the reverse).
std::array<unsigned char, 32> keyOf(const json &j, const std::string &peerId)
{
    const auto hex = text(j, "k", 64);
    std::array<unsigned char, 32> key{};
    try {
        key = parsePeerKeyHex(hex);
    } catch (const std::exception &e) {
        throw ProtocolError(std::string("field \"k\": ") + e.what());
    }
    if (PeerIdentity::peerIdOf(key) != peerId)
        throw ProtocolError("field \"k\" is not the key of peer " + peerId.substr(0, 16));
    return key;
}

PeerRole roleFrom(long code)
{
    switch (code) {
    case 0: return PeerRole::Trainer;
    case 1: return PeerRole::Auxiliary;
    case 2: return PeerRole::Monitor;
    default: throw ProtocolError("unknown role " + std::to_string(code));
    }
}

bool isDigest(const std::string &h)
{
    return h.size() == 64 && h.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::vector<GroupRecord::SealEntry> parseSeal(const json &s)
{
    if (!s.is_array() || s.empty() || s.size() > MaxSealGroups)
        throw ProtocolError("group record seal is not a list of 1 to " + std::to_string(MaxSealGroups) + " groups");
    std::vector<GroupRecord::SealEntry> seal;
    for (const auto &e : s) {
        if (!e.is_array() || e.size() != 3 || !e[0].is_string() || !e[1].is_number_integer() || !e[2].is_string())
            throw ProtocolError("group record seal entry is not [group id, weight, digest]");
        GroupRecord::SealEntry entry{e[0].get<std::string>(), e[1].get<long>(), e[2].get<std::string>()};
        if (entry.groupId.empty() || entry.groupId.size() > 64 || entry.weight < 0 || !isDigest(entry.digest))
            throw ProtocolError("group record seal entry out of range");
        if (std::any_of(seal.begin(), seal.end(), [&](const auto &o) { return o.groupId == entry.groupId; }))
            throw ProtocolError("group record seal names group " + entry.groupId + " twice");
        seal.push_back(std::move(entry));
    }
    return seal;
}

} // namespace

std::string encodeProgress(const ProgressRecord &r)
{
    json j{{"e", r.epoch}, {"n", r.samplesAccumulated}, {"r", r.samplesPerSecond}, {"c", r.clientMode},
           {"o", static_cast<int>(r.role)}, {"z", r.paused}, {"a", r.averages}};
    if (r.syncing)
        j["y"] = true;
    if (!r.accessToken.empty())
        j["k"] = r.accessToken;
    if (!r.stateDigest.empty()) {
        j["se"] = r.stateEpoch;
        j["sh"] = r.stateDigest;
    }
    if (r.followedEpoch > r.epoch)
        j["f"] = r.followedEpoch;
    if (r.shardCount > 1)
        j["h"] = r.shardCount;
    return j.dump();
}

ProgressRecord parseProgress(const SignedRecord &record)
{
    const auto j = parseJsonPayload(record.payload, "progress");
    ProgressRecord r;
    r.peerId = record.peerId;
    r.time = record.time;
    r.expiresAt = record.expiresAt;
    r.epoch = nonNegative(j, "e");
    r.samplesAccumulated = nonNegative(j, "n");
    r.samplesPerSecond = finite(j, "r");
    if (r.samplesPerSecond < 0)
        throw ProtocolError("negative samples per second");
    r.clientMode = flag(j, "c");
    r.role = roleFrom(nonNegative(j, "o", 2));
    r.paused = flag(j, "z");
    r.syncing = j.contains("y") && flag(j, "y");
    r.averages = j.contains("a") ? flag(j, "a") : r.role != PeerRole::Monitor;
    if (j.contains("k"))
        r.accessToken = text(j, "k", MaxTokenBytes);
    if (j.contains("sh")) {
        r.stateDigest = stateDigestField(j, "sh");
        r.stateEpoch = nonNegative(j, "se");
    }
    r.followedEpoch = j.contains("f") ? nonNegative(j, "f") : 0;
    r.shardCount = j.contains("h") ? static_cast<int>(nonNegative(j, "h", 1024)) : 1;
    if (r.shardCount < 1 || (r.shardCount & (r.shardCount - 1)) != 0)
        throw ProtocolError("shard count " + std::to_string(r.shardCount) + " is not a power of two in 1..1024");
    return r;
}

std::string encodeDeclaration(const Declaration &d)
{
    return json{{"e", d.epoch}, {"s", d.schema}, {"a", d.serviceEndpoint}, {"x", d.expiresAt}, {"c", d.clientMode}}
        .dump();
}

Declaration parseDeclaration(const SignedRecord &record)
{
    const auto j = parseJsonPayload(record.payload, "declaration");
    Declaration d;
    d.peerId = record.peerId;
    d.epoch = nonNegative(j, "e");
    d.schema = text(j, "s", MaxIdBytes);
    d.serviceEndpoint = endpoint(j, "a");
    d.expiresAt = finite(j, "x");
    d.clientMode = flag(j, "c");
    d.publicKey = record.publicKey;
    if (!d.clientMode && d.serviceEndpoint.empty())
        throw ProtocolError("a reachable peer declared no service endpoint");
    return d;
}

json suggestedLeaderToJson(const Declaration &leader)
{
    return json{{"p", leader.peerId}, {"k", toHex(leader.publicKey.data(), leader.publicKey.size())},
                {"a", leader.serviceEndpoint}, {"x", leader.expiresAt}};
}

Declaration suggestedLeaderFromJson(const json &field, long epoch, const std::string &schema)
{
    if (!field.is_object())
        throw ProtocolError("the suggested leader is not an object");
    Declaration d;
    d.peerId = text(field, "p", MaxIdBytes);
    d.publicKey = keyOf(field, d.peerId);
    d.serviceEndpoint = endpoint(field, "a");
    if (d.serviceEndpoint.rfind("tcp://", 0) != 0)
        throw ProtocolError("the suggested leader has no TCP service endpoint");
    d.expiresAt = finite(field, "x");
    d.epoch = epoch;
    d.schema = schema;
    return d;
}

std::string encodeDonorAdvert(const DonorAdvert &a)
{
    json j{{"a", a.serviceEndpoint}, {"e", a.epoch}};
    if (a.mayDiffer)
        j["d"] = true;
    return j.dump();
}

DonorAdvert parseDonorAdvert(const SignedRecord &record)
{
    const auto j = parseJsonPayload(record.payload, "donor advert");
    DonorAdvert a;
    a.peerId = record.peerId;
    a.serviceEndpoint = endpoint(j, "a");
    if (a.serviceEndpoint.empty())
        throw ProtocolError("donor advert without an endpoint");
    a.epoch = nonNegative(j, "e");
    a.mayDiffer = j.contains("d") && flag(j, "d");
    a.publicKey = record.publicKey;
    return a;
}

std::string encodeGroupRecord(const GroupRecord &r)
{
    json j{{"e", r.epoch}, {"g", r.groupId}, {"w", r.weight}, {"n", r.members}, {"h", r.digest},
           {"a", r.serviceEndpoint}};
    if (!r.seal.empty()) {
        json s = json::array();
        for (const auto &e : r.seal)
            s.push_back(json::array({e.groupId, e.weight, e.digest}));
        j["s"] = std::move(s);
    }
    if (r.ended)
        j["x"] = true;
    return j.dump();
}

GroupRecord parseGroupRecord(const SignedRecord &record)
{
    const auto j = parseJsonPayload(record.payload, "group record");
    GroupRecord r;
    r.peerId = record.peerId;
    r.publicKey = record.publicKey;
    r.epoch = nonNegative(j, "e");
    r.groupId = text(j, "g", 64);
    if (r.groupId.empty())
        throw ProtocolError("group record without a group id");
    r.weight = nonNegative(j, "w");
    r.members = static_cast<std::size_t>(nonNegative(j, "n", MaxGroupMembers));
    if (r.members < 2)
        throw ProtocolError("group record of fewer than two members");
    if (r.digest = text(j, "h", 64); !r.digest.empty() && !isDigest(r.digest))
        throw ProtocolError("group record digest is not 64 hex digits");
    r.serviceEndpoint = endpoint(j, "a");
    if (j.contains("s"))
        r.seal = parseSeal(j.at("s"));
    r.ended = j.contains("x") && flag(j, "x");
    if (r.ended && (!r.digest.empty() || !r.seal.empty()))
        throw ProtocolError("group record of a round that ended without an average claims one");
    r.signedValue = record.value;
    return r;
}

std::vector<std::uint8_t> encodeServiceMessage(const std::string &type, const json &fields)
{
    json j = fields.is_object() ? fields : json::object();
    j["v"] = ServiceProtocolVersion;
    j["t"] = type;
    return json::to_cbor(j);
}

json parseServiceMessage(std::span<const std::uint8_t> bytes)
{
    if (bytes.size() > MaxServiceHeaderBytes)
        throw ProtocolError("service header of " + std::to_string(bytes.size()) + " bytes exceeds "
                            + std::to_string(MaxServiceHeaderBytes));
    auto j = parseCbor(bytes);
    if (j.is_discarded() || !j.is_object())
        throw ProtocolError("service header is not a CBOR map");
    if (nonNegative(j, "v", 1000) != ServiceProtocolVersion)
        throw ProtocolError("service protocol version " + std::to_string(j.at("v").get<long>()) + " is not "
                            + std::to_string(ServiceProtocolVersion));
    static const char *known[] = {"join",   "accept", "refuse",  "begin", "disband", "state?", "state", "part?", "part",
                                  "update?", "update", "upart?", "upart", "reach?",  "reach",  "ping",  "pong",  "seal?",   "seal"};
    const auto type = text(j, "t", 16);
    bool ok = false;
    for (const char *k : known)
        ok = ok || type == k;
    if (!ok)
        throw ProtocolError("unknown service message \"" + type + "\"");
    return j;
}

json reachRequestToJson(const ReachRequest &r)
{
    return json{{"p", r.peerId}, {"k", toHex(r.publicKey.data(), r.publicKey.size())}, {"a", r.serviceEndpoint}};
}

ReachRequest reachRequestFromJson(const json &j)
{
    ReachRequest r;
    r.peerId = text(j, "p", MaxIdBytes);
    r.publicKey = keyOf(j, r.peerId);
    r.serviceEndpoint = endpoint(j, "a");
    if (r.serviceEndpoint.empty())
        throw ProtocolError("reach? without an endpoint to check");
    return r;
}

json joinToJson(const JoinRequest &r)
{
    json j{{"run", r.runId}, {"e", r.epoch}, {"s", r.schema}, {"p", r.peerId},
           {"k", toHex(r.publicKey.data(), r.publicKey.size())}, {"a", r.allReduceEndpoint},
           {"b", r.bandwidth}, {"c", r.clientMode}, {"x", r.sender}, {"r", r.repair},
           {"n", r.expected}};
    if (!r.stateDigest.empty())
        j["d"] = r.stateDigest;
    return j;
}

JoinRequest joinFromJson(const json &j)
{
    JoinRequest r;
    r.runId = text(j, "run", MaxIdBytes);
    r.epoch = nonNegative(j, "e");
    r.schema = text(j, "s", MaxIdBytes);
    r.peerId = text(j, "p", MaxIdBytes);
    if (r.peerId.empty())
        throw ProtocolError("join without a peer id");
    r.publicKey = keyOf(j, r.peerId);
    r.allReduceEndpoint = endpoint(j, "a");
    r.bandwidth = finite(j, "b");
    r.clientMode = flag(j, "c");
    r.sender = flag(j, "x");
    r.repair = flag(j, "r");
    r.expected = j.contains("n") ? static_cast<std::size_t>(nonNegative(j, "n", static_cast<long>(MaxGroupMembers))) : 0;
    r.stateDigest = stateDigestField(j, "d");
    if (!r.clientMode && r.allReduceEndpoint.empty())
        throw ProtocolError("a reachable peer asked to join without an all-reduce endpoint");
    if (r.clientMode && !r.sender)
        throw ProtocolError("a client-mode peer cannot be auxiliary (it reduces nothing)");
    return r;
}

bool GroupInfo::stateRound() const
{
    return std::any_of(members.begin(), members.end(), [](const GroupMember &m) { return m.repair; });
}

bool GroupInfo::statesAgree() const
{
    return !members.empty() && std::all_of(members.begin(), members.end(), [&](const GroupMember &m) {
        return !m.repair && !m.stateDigest.empty() && m.stateDigest == members.front().stateDigest;
    });
}

json groupToJson(const GroupInfo &g)
{
    json members = json::array();
    for (const auto &m : g.members) {
        members.push_back(json{{"p", m.peerId}, {"k", toHex(m.publicKey.data(), m.publicKey.size())},
                               {"a", m.endpoint}, {"b", m.bandwidth}, {"x", m.weight > 0.0}, {"z", m.share}, {"r", m.repair}});
        if (!m.stateDigest.empty())
            members.back()["d"] = m.stateDigest;
    }
    return json{{"g", g.groupId}, {"e", g.epoch}, {"m", members}};
}

GroupInfo groupFromJson(const json &j)
{
    GroupInfo g;
    g.groupId = text(j, "g", 64);
    if (g.groupId.empty())
        throw ProtocolError("empty group id");
    g.epoch = nonNegative(j, "e");
    const auto &m = field(j, "m");
    std::int64_t shares = 0;
    if (!m.is_array() || m.size() < 2 || m.size() > MaxGroupMembers)
        throw ProtocolError("group member list must hold 2 to " + std::to_string(MaxGroupMembers) + " members");
    for (const auto &e : m) {
        if (!e.is_object())
            throw ProtocolError("group member is not a map");
        GroupMember member;
        member.peerId = text(e, "p", MaxIdBytes);
        member.publicKey = keyOf(e, member.peerId);
        member.endpoint = endpoint(e, "a");
        member.bandwidth = finite(e, "b");
        member.weight = flag(e, "x") ? 1.0 : 0.0;
        member.share = nonNegative(e, "z", ShardShareTotal);
        member.repair = flag(e, "r");
        member.stateDigest = stateDigestField(e, "d");
        if (member.endpoint.empty() && member.weight == 0.0)
            throw ProtocolError("a member with neither a shard nor gradients");
        if (member.endpoint.empty() && member.share != 0)
            throw ProtocolError("a client-mode member cannot hold a shard");
        for (const auto &other : g.members)
            if (other.peerId == member.peerId)
                throw ProtocolError("peer " + member.peerId + " appears twice in the group");
        shares += member.share;
        g.members.push_back(std::move(member));
    }
    // Every member lays out the same shards from these shares (averaging/LoadBalancing.h).
    if (shares != ShardShareTotal)
        throw ProtocolError("the shard shares sum to " + std::to_string(shares) + ", not "
                            + std::to_string(ShardShareTotal));
    return g;
}

json stateInfoToJson(const StateInfo &s)
{
    json j{{"i", s.snapshotId}, {"e", s.epoch}, {"n", s.elements}, {"k", s.parts}, {"q", s.partElements}};
    if (!s.digest.empty())
        j["h"] = s.digest;
    return j;
}

StateInfo stateInfoFromJson(const json &j, std::uint64_t expectedElements)
{
    StateInfo s;
    s.snapshotId = text(j, "i", 64);
    s.epoch = nonNegative(j, "e");
    s.elements = static_cast<std::uint64_t>(nonNegative(j, "n"));
    s.parts = static_cast<std::uint32_t>(nonNegative(j, "k", 1L << 24));
    s.partElements = static_cast<std::uint64_t>(nonNegative(j, "q", 1L << 24));
    if (s.elements != expectedElements)
        throw ProtocolError("donor offers " + std::to_string(s.elements) + " state elements, this model has "
                            + std::to_string(expectedElements));
    if (s.partElements == 0 || s.parts != (s.elements + s.partElements - 1) / s.partElements)
        throw ProtocolError("state part layout is inconsistent");
    s.digest = stateDigestField(j, "h");
    return s;
}

std::string schemaHash(const std::string &runId, long long elements, const std::string &what)
{
    const auto description = runId + "|" + what + "|" + std::to_string(elements);
    return sha256Hex(description.data(), description.size()).substr(0, 16);
}

std::string textOr(const json &message, const char *key, const std::string &fallback)
{
    const auto it = message.find(key);
    return it != message.end() && it->is_string() ? it->get<std::string>() : fallback;
}

double numberOr(const json &message, const char *key, double fallback)
{
    const auto it = message.find(key);
    const double x = it != message.end() && it->is_number() ? it->get<double>() : fallback;
    return std::isfinite(x) ? x : fallback;
}

long integerOr(const json &message, const char *key, long fallback)
{
    const auto it = message.find(key);
    return it != message.end() && it->is_number_integer() ? it->get<long>() : fallback;
}

} // namespace dedloc
