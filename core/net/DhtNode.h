#pragma once
// The control plane's storage: signed, sequence-numbered, expiring records on OpenDHT
// (libopendht's Kademlia DHT; docs/PROTOCOL.md "DHT records").
//
// A record is published under a text key (derived from the run id: runKey()) as one DHT value
// whose bytes are a CBOR map {k: key, p: Ed25519 public key, q: sequence, t: time, e: expires at,
// d: payload, s: signature}; s signs the CBOR of the map without s, with the peer's key. Readers
// keep only records that verify, whose k is the key they asked for (no replay under another key),
// that have not expired and are not more than `allowedClockSkew` in the future, and of those the
// highest sequence per peer (OpenDHT can return an older copy beside a newer one).
// Payloads are limited to 60 KiB (OpenDHT values to 64 KiB).
// Records are values of one OpenDHT type that every DhtNode registers: the nodes holding a key
// store only records that verify under it, and a peer's newer record (higher sequence, same
// signer) replaces its older one there (docs/PROTOCOL.md "DHT records"). For benchmarks of the
// earlier behaviour, DEDLOC_DHT_UNTYPED=1 puts them as OpenDHT's default type, whose nodes keep a
// peer's first record and refuse its later ones.
//
// Threads: OpenDHT runs its own thread; publish() and fetch() block the caller until the DHT
// answers or `timeout` passes (never forever). Thread-safe: several threads may publish and
// fetch at once (the swarm's control thread and its matchmaker do).
// Binds UDP (IPv4) on the given address, 127.0.0.1 by default (tests, local swarms); a peer that
// other machines must reach binds the address it advertises (`dedloc --host`), or 0.0.0.0.
// OpenDHT learns other nodes' addresses from the packets they send. No bootstrap happens unless
// bootstrap() is called.
#include "net/PeerIdentity.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dedloc {

struct SignedRecord {
    std::string peerId;       // derived from the verified public key
    std::array<unsigned char, PeerIdentity::PublicKeyBytes> publicKey{}; // the signer's Ed25519 key
    std::uint64_t sequence = 0;
    double time = 0.0;        // Unix seconds, publisher's clock
    double expiresAt = 0.0;
    std::string payload;
    std::string value;        // the DHT value as stored: verifySignedRecord() checks it again
                              // wherever it is relayed
};

// A DHT value's bytes as fetch() decodes them: a CBOR map {k, p, q, t, e, d, s} stored under
// `key`, signed by the Ed25519 key p over the CBOR of the map without s, not expired at `now` and
// at most `skew` seconds in the future. nullopt for anything else (malformed, nested too deep,
// forged, replayed under another key); never throws. `why`, when not null, is set to the reason
// of a refusal: "malformed", "another key", "expired", "from the future" or "bad signature".
[[nodiscard]] std::optional<SignedRecord> verifySignedRecord(const std::string &key,
                                                             std::span<const std::uint8_t> bytes, double now,
                                                             double skew, const char **why = nullptr);

// "dedloc/<run id>/<kind>", e.g. kind "progress", "matchmaking", "donors", "metrics".
[[nodiscard]] std::string runKey(const std::string &runId, const std::string &kind);

class DhtNode final {
public:
    // port 0: an ephemeral port. `bindAddress`: an IPv4 address of this machine, or 0.0.0.0.
    // Throws dedloc::Error if the node cannot start (address not local, port taken).
    DhtNode(const PeerIdentity &identity, std::uint16_t port = 0, const std::string &bindAddress = "127.0.0.1");
    ~DhtNode(); // shuts the node down and joins its thread
    DhtNode(const DhtNode &) = delete;
    DhtNode &operator=(const DhtNode &) = delete;

    [[nodiscard]] std::uint16_t port() const;
    // "host:port"; returns immediately (OpenDHT connects in the background).
    void bootstrap(const std::string &hostPort);
    // Pings every peer bootstrap() was given again. A node forgets a peer that stopped answering
    // (after about half a minute), and a bootstrap node that restarts knows nobody: only a ping
    // from this side joins them again. Call it now and then, off any thread that must not wait:
    // it resolves the names again, which blocks up to the resolver's timeout.
    void bootstrapAgain();
    // Nodes this node knows (good + dubious, IPv4).
    [[nodiscard]] unsigned knownNodes() const;
    // Waits until at least `count` nodes are known or `timeout` seconds pass; returns whether
    // they are.
    bool waitForNodes(unsigned count, double timeout);

    // Publishes `payload` under `key`, valid for `ttlSeconds`. Each call uses a higher sequence
    // number than the last for that key. Retries while the node has no neighbours yet; returns
    // false if the DHT did not confirm within `timeout` seconds.
    bool publish(const std::string &key, const std::string &payload, double ttlSeconds, double timeout = 5.0);
    // The DHT value id of this node's records under `key` (one value per key, which each newer
    // record replaces wherever it is stored).
    [[nodiscard]] std::uint64_t valueId(const std::string &key) const;
    // Publishes raw value bytes (for tests that forge or replay records).
    bool publishRaw(const std::string &key, const std::string &bytes, std::uint64_t valueId, double timeout = 5.0);
    // Verified, unexpired records, newest per peer.
    [[nodiscard]] std::vector<SignedRecord> fetch(const std::string &key, double timeout = 5.0,
                                                  double allowedClockSkew = 3.0);

    // Bytes of record values this node has put (each attempt) and got (every copy a fetch
    // received), since it started: the control plane's traffic as the swarm's records make it up.
    // OpenDHT's own routing messages are not counted. Thread-safe.
    struct RecordTraffic {
        std::uint64_t put = 0;
        std::uint64_t got = 0;
    };
    [[nodiscard]] RecordTraffic recordTraffic() const;

    // What this node's OpenDHT instance holds: its searches (a key this node put or got; OpenDHT
    // drops a finished search 62 minutes after its last step, and never one whose put was not
    // confirmed by every node it chose), those not finished, and the values it stores for others.
    // Costs one lock of the DHT thread per search: call it now and then, not per step.
    struct Footprint {
        std::size_t searches = 0;
        std::size_t unfinishedSearches = 0; // still stepping: a get or a put under way, or a put never confirmed
        std::size_t storedKeys = 0;
        std::size_t storedValues = 0;
        std::size_t storedBytes = 0;
    };
    [[nodiscard]] Footprint footprint() const;

    // The encoded bytes publish() would store: for tests, and for a record relayed beside the DHT
    // (averaging/SealRelay.h).
    [[nodiscard]] std::string encodeRecord(const std::string &key, const std::string &payload, std::uint64_t sequence,
                                           double time, double expiresAt) const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace dedloc
