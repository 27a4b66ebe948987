#include "net/DhtNode.h"

#include "net/RecordSequences.h"
#include "util/Error.h"
#include "util/Log.h"
#include "util/Clock.h"
#include "util/JsonReader.h"

#include <nlohmann/json.hpp>
#include <opendht.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <tuple>
#include <future>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>

namespace dedloc {

namespace {

constexpr std::size_t MaxPayloadBytes = 60 * 1024;


nlohmann::json::binary_t binary(const std::string &s) { return nlohmann::json::binary_t(std::vector<std::uint8_t>(s.begin(), s.end())); }

std::string fromBinary(const nlohmann::json &j)
{
    const auto &b = j.get_binary();
    return {b.begin(), b.end()};
}

// Signature input: the CBOR of the record without "s" (nlohmann orders keys, so it is canonical).
std::string signedBytes(const nlohmann::json &recordWithoutSignature)
{
    const auto bytes = nlohmann::json::to_cbor(recordWithoutSignature);
    return {bytes.begin(), bytes.end()};
}

// The OpenDHT value type of every record: nodes of this type store a record that verifies, and
// let a newer record of the same signer replace it (OpenDHT's default type stores anything and
// replaces nothing, so the nodes other than the publisher's kept a peer's first record).
constexpr dht::ValueType::Id RecordType = 0x6464;
// Storage is lenient with the publisher's clock; readers apply their own allowance.
constexpr double StoreClockSkewSeconds = 300.0;

// Benchmarks of the earlier behaviour: DEDLOC_DHT_UNTYPED=1 puts records as OpenDHT's default
// type, whose nodes keep a peer's first record and refuse the later ones.
bool untypedRecords()
{
    static const bool untyped = [] {
        const char *v = std::getenv("DEDLOC_DHT_UNTYPED");
        return v && std::string_view(v) == "1";
    }();
    return untyped;
}

} // namespace

std::optional<SignedRecord> verifySignedRecord(const std::string &key, std::span<const std::uint8_t> bytes, double now,
                                               double skew, const char **why)
{
    const auto refuse = [why](const char *reason) -> std::optional<SignedRecord> {
        if (why)
            *why = reason;
        return std::nullopt;
    };
    try {
        auto j = parseCbor(bytes);
        if (!j.is_object() || j.size() != 7)
            return refuse("malformed");
        if (j.at("k").get<std::string>() != key)
            return refuse("another key"); // a record replayed under another key
        const std::string pk = fromBinary(j.at("p"));
        const std::string signature = fromBinary(j.at("s"));
        if (pk.size() != PeerIdentity::PublicKeyBytes)
            return refuse("malformed");
        SignedRecord r;
        r.sequence = j.at("q").get<std::uint64_t>();
        r.time = j.at("t").get<double>();
        r.expiresAt = j.at("e").get<double>();
        r.payload = fromBinary(j.at("d"));
        if (!(r.expiresAt > now))
            return refuse("expired");
        if (r.time > now + skew)
            return refuse("from the future");
        j.erase("s");
        std::array<unsigned char, PeerIdentity::PublicKeyBytes> publicKey{};
        std::copy(pk.begin(), pk.end(), publicKey.begin());
        if (!PeerIdentity::verify(publicKey, signedBytes(j), signature))
            return refuse("bad signature");
        r.peerId = PeerIdentity::peerIdOf(publicKey);
        r.publicKey = publicKey;
        r.value.assign(reinterpret_cast<const char *>(bytes.data()), bytes.size());
        return r;
    } catch (const std::exception &) {
        return refuse("malformed");
    }
}

namespace {

// The record a stored value holds: one that verifies, under the text key whose hash is `hash`.
std::optional<SignedRecord> recordUnder(const dht::InfoHash &hash, const dht::Value &value, double now)
{
    std::string key;
    try {
        const auto j = parseCbor(value.data);
        if (j.is_object() && j.contains("k") && j.at("k").is_string())
            key = j.at("k").get<std::string>();
    } catch (const std::exception &) {
        return std::nullopt;
    }
    if (key.empty() || dht::InfoHash::get(key) != hash)
        return std::nullopt;
    return verifySignedRecord(key, value.data, now, StoreClockSkewSeconds);
}

// The signer and sequence of a record already stored (it verified when it was stored; it may
// have expired since).
std::optional<std::pair<std::array<unsigned char, PeerIdentity::PublicKeyBytes>, std::uint64_t>>
heldRecord(const dht::Value &value)
{
    try {
        const auto j = parseCbor(value.data);
        const std::string pk = fromBinary(j.at("p"));
        if (pk.size() != PeerIdentity::PublicKeyBytes)
            return std::nullopt;
        std::array<unsigned char, PeerIdentity::PublicKeyBytes> key{};
        std::copy(pk.begin(), pk.end(), key.begin());
        return std::make_pair(key, j.at("q").get<std::uint64_t>());
    } catch (const std::exception &) {
        return std::nullopt;
    }
}

dht::ValueType recordType()
{
    const auto store = [](dht::InfoHash key, std::shared_ptr<dht::Value> &value, const dht::InfoHash &,
                          const dht::SockAddr &) {
        return value && value->data.size() <= dht::MAX_VALUE_SIZE && recordUnder(key, *value, unixNow()).has_value();
    };
    // Only a newer record (higher sequence) of the same signer replaces the stored one, expired
    // or not: a stranger who could take an expired record's place would keep it, and every
    // later record of its owner would be refused there.
    const auto edit = [](dht::InfoHash key, const std::shared_ptr<dht::Value> &old, std::shared_ptr<dht::Value> &value,
                         const dht::InfoHash &, const dht::SockAddr &) {
        if (!old || !value || value->data.size() > dht::MAX_VALUE_SIZE)
            return false;
        const double now = unixNow();
        const auto fresh = recordUnder(key, *value, now);
        if (!fresh)
            return false;
        const auto held = heldRecord(*old);
        return held && held->first == fresh->publicKey && fresh->sequence > held->second;
    };
    return dht::ValueType(RecordType, "dedloc signed record", std::chrono::minutes(10), store, edit);
}

} // namespace

std::string runKey(const std::string &runId, const std::string &kind) { return "dedloc/" + runId + "/" + kind; }

struct DhtNode::Impl {
    PeerIdentity identity;
    dht::DhtRunner runner;
    std::mutex sequenceMutex;
    RecordSequences sequences;                         // guarded by sequenceMutex
    std::mutex bootstrapMutex;
    std::vector<std::pair<std::string, std::string>> bootstrapPeers; // (host, port), guarded by bootstrapMutex
    std::atomic<std::uint64_t> bytesPut{0}, bytesGot{0};
    std::string valueIdSalt = dht::InfoHash::getRandom().toString();
    explicit Impl(const PeerIdentity &id) : identity(id) {}
};

DhtNode::DhtNode(const PeerIdentity &identity, std::uint16_t port, const std::string &bindAddress)
    : d(std::make_unique<Impl>(identity))
{
    try {
        dht::DhtRunner::Config config;
        config.threaded = true;
        const auto addresses = dht::SockAddr::resolve(bindAddress, std::to_string(port));
        if (addresses.empty() || addresses.front().getFamily() != AF_INET)
            throw Error("\"" + bindAddress + "\" is not an IPv4 address");
        config.bind4 = addresses.front();
        d->runner.run(config, dht::DhtRunner::Context{});
        d->runner.registerType(recordType());
    } catch (const std::exception &e) {
        throw Error("cannot start the DHT node on " + bindAddress + ":" + std::to_string(port) + ": " + e.what());
    }
    // A bootstrap node must hold the port volunteers were told: a node on another port is a failure.
    if (port != 0 && d->runner.getBoundPort(AF_INET) != port)
        throw Error("cannot start the DHT node on " + bindAddress + ":" + std::to_string(port) + ": the port is in use or not bindable");
}

DhtNode::~DhtNode()
{
    try {
        d->runner.shutdown({}, true);
        d->runner.join();
    } catch (...) {
        // Shutting down must not throw from a destructor.
    }
}

DhtNode::RecordTraffic DhtNode::recordTraffic() const { return {d->bytesPut.load(), d->bytesGot.load()}; }

DhtNode::Footprint DhtNode::footprint() const
{
    // OpenDHT reports these only as text: "Total: N searches (...)", one "[search <hash> IPv4]"
    // line per search (or, up to 8, a dump starting "Search IPv4 <hash>"), a dump per search
    // whose first line says "[done]" once it stopped, and "Total N storages, V values".
    Footprint f;
    std::istringstream searches(d->runner.getSearchesLog(AF_INET));
    std::vector<std::string> ids;
    for (std::string line; std::getline(searches, line);) {
        std::istringstream words(line);
        std::string first, second, third;
        words >> first >> second >> third;
        if (first == "[search")
            ids.push_back(second);
        else if (first == "Search" && second == "IPv4")
            ids.push_back(third);
    }
    f.searches = ids.size();
    for (const auto &id : ids) {
        const auto dump = d->runner.getSearchLog(dht::InfoHash(id), AF_INET);
        if (dump.find("Search IPv4") == std::string::npos)
            continue; // removed since the list was read
        const auto header = dump.substr(0, dump.find('\n', dump.find("Search IPv4")));
        if (header.find("[done]") == std::string::npos)
            ++f.unfinishedSearches;
    }
    std::istringstream storage(d->runner.getStorageLog());
    for (std::string line; std::getline(storage, line);)
        if (line.rfind("Total ", 0) == 0) {
            std::istringstream words(line.substr(6));
            words >> f.storedKeys;
        }
    std::tie(f.storedBytes, f.storedValues) = d->runner.getStoreSize();
    return f;
}

std::uint16_t DhtNode::port() const { return d->runner.getBoundPort(AF_INET); }

void DhtNode::bootstrap(const std::string &hostPort)
{
    const auto colon = hostPort.rfind(':');
    if (colon == std::string::npos)
        throw Error("bootstrap peer \"" + hostPort + "\" is not host:port");
    std::pair<std::string, std::string> peer{hostPort.substr(0, colon), hostPort.substr(colon + 1)};
    d->runner.bootstrap(peer.first, peer.second);
    std::lock_guard lock(d->bootstrapMutex);
    if (std::find(d->bootstrapPeers.begin(), d->bootstrapPeers.end(), peer) == d->bootstrapPeers.end())
        d->bootstrapPeers.push_back(std::move(peer));
}

void DhtNode::bootstrapAgain()
{
    std::vector<std::pair<std::string, std::string>> peers;
    {
        std::lock_guard lock(d->bootstrapMutex);
        peers = d->bootstrapPeers;
    }
    // A ping of each address (OpenDHT's bootstrap by name pings only while the node knows nobody).
    std::vector<dht::SockAddr> addresses;
    for (const auto &[host, port] : peers) {
        try {
            for (auto &a : dht::SockAddr::resolve(host, port))
                if (a.getFamily() == AF_INET)
                    addresses.push_back(std::move(a));
        } catch (const std::exception &e) {
            log::debug("dht", "bootstrap peer " + host + ":" + port + " not resolved: " + e.what());
        }
    }
    if (!addresses.empty())
        d->runner.bootstrap(std::move(addresses));
}

std::string DhtNode::encodeRecord(const std::string &key, const std::string &payload, std::uint64_t sequence,
                                  double time, double expiresAt) const
{
    const auto &pk = d->identity.publicKey();
    nlohmann::json j = {{"k", key},
                        {"p", binary(std::string(pk.begin(), pk.end()))},
                        {"q", sequence},
                        {"t", time},
                        {"e", expiresAt},
                        {"d", binary(payload)}};
    j["s"] = binary(d->identity.sign(signedBytes(j)));
    const auto bytes = nlohmann::json::to_cbor(j);
    return {bytes.begin(), bytes.end()};
}

unsigned DhtNode::knownNodes() const
{
    return d->runner.getNodesStats(AF_INET).getKnownNodes();
}

bool DhtNode::waitForNodes(unsigned count, double timeout)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    while (knownNodes() < count) {
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

bool DhtNode::publishRaw(const std::string &key, const std::string &bytes, std::uint64_t valueId, double timeout)
{
    auto value = std::make_shared<dht::Value>(reinterpret_cast<const std::uint8_t *>(bytes.data()), bytes.size());
    value->id = valueId;
    value->type = untypedRecords() ? 0 : RecordType;
    // A put fails at once while the node has no neighbours yet (just started, bootstrap under
    // way): try again until the deadline instead of reporting the first failure.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    while (true) {
        auto done = std::make_shared<std::promise<bool>>();
        auto future = done->get_future();
        d->bytesPut += bytes.size();
        d->runner.put(dht::InfoHash::get(key), value, [done](bool ok) { done->set_value(ok); });
        if (future.wait_until(deadline) != std::future_status::ready)
            return false;
        if (future.get())
            return true;
        if (std::chrono::steady_clock::now() + std::chrono::milliseconds(200) >= deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
}

bool DhtNode::publish(const std::string &key, const std::string &payload, double ttlSeconds, double timeout)
{
    if (payload.size() > MaxPayloadBytes)
        throw Error("DHT record of " + std::to_string(payload.size()) + " bytes exceeds " +
                    std::to_string(MaxPayloadBytes));
    const double now = unixNow();
    // Sequence: strictly increasing per key, and above any earlier process's (time-based start).
    std::uint64_t sequence = 0;
    {
        std::lock_guard lock(d->sequenceMutex);
        sequence = d->sequences.next(key, now);
    }
    const auto bytes = encodeRecord(key, payload, sequence, now, now + ttlSeconds);
    return publishRaw(key, bytes, valueId(key), timeout);
}

std::uint64_t DhtNode::valueId(const std::string &key) const
{
    // One value id per (peer, key), so a re-put replaces this peer's value where it is stored.
    // Salted per node: a stranger cannot place a value under it before this peer does (a value of
    // a type that is not a record could then never be replaced).
    std::uint64_t id = 0;
    const auto h = dht::InfoHash::get(d->valueIdSalt + "|" + d->identity.peerId() + "|" + key);
    std::memcpy(&id, h.data(), sizeof id);
    return id;
}

std::vector<SignedRecord> DhtNode::fetch(const std::string &key, double timeout, double allowedClockSkew)
{
    auto mutex = std::make_shared<std::mutex>();
    auto raw = std::make_shared<std::vector<std::vector<std::uint8_t>>>();
    auto done = std::make_shared<std::promise<void>>();
    auto future = done->get_future();
    d->runner.get(
        dht::InfoHash::get(key),
        [mutex, raw](const std::vector<std::shared_ptr<dht::Value>> &values) {
            std::lock_guard lock(*mutex);
            for (const auto &v : values)
                if (v && v->data.size() <= 64 * 1024)
                    raw->push_back(v->data);
            return true;
        },
        [done](bool) { done->set_value(); });
    future.wait_for(std::chrono::duration<double>(timeout));
    std::lock_guard lock(*mutex);
    for (const auto &bytes : *raw)
        d->bytesGot += bytes.size();
    const double now = unixNow();
    std::map<std::string, SignedRecord> newest;
    std::map<std::string, int> refused; // by reason
    for (const auto &bytes : *raw) {
        const char *why = "";
        auto r = verifySignedRecord(key, bytes, now, allowedClockSkew, &why);
        if (!r) {
            ++refused[why];
            continue;
        }
        auto it = newest.find(r->peerId);
        if (it == newest.end() || it->second.sequence < r->sequence)
            newest[r->peerId] = *r;
    }
    if (!refused.empty()) {
        // Expired ones are usual (older copies that DHT nodes keep longer than a record lives);
        // the others are forgeries or broken peers.
        std::string counts;
        for (const auto &[why, n] : refused)
            counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + why;
        log::debug("dht", "refused record(s) under " + key + ": " + counts);
    }
    std::vector<SignedRecord> out;
    for (auto &[id, r] : newest)
        out.push_back(std::move(r));
    return out;
}

} // namespace dedloc
