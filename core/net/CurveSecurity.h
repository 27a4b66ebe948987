#pragma once
// CurveZMQ on the data plane (RFC 26/CURVEZMQ, ZAP RFC 27/ZAP of rfc.zeromq.org): every link
// between peers is encrypted and authenticated; in a closed run a peer is admitted only with a
// valid access token (security/AccessToken.h).
//
// Keys: a peer's Curve25519 key pair is derived from its Ed25519 identity
// (crypto_sign_ed25519_pk_to_curve25519 / _sk_to_curve25519, libsodium), so peers need no extra
// keys and a server's CURVE key follows from the identity key it publishes in the DHT.
//
// How the swarm wires it (per zmq::context_t that owns data-plane sockets):
//   struct Impl {
//       zmq::context_t context;
//       std::unique_ptr<ZapHandler> zap;        // 1. created before any server socket binds
//       std::unique_ptr<zmq::socket_t> router;  // destroyed first (reverse order), then zap, then context
//   };
//   zap = std::make_unique<ZapHandler>(context, policy, registry);
//   configureCurveServer(*router, curveKeyPairOf(identity)); router->bind(...);     // ROUTER
//   configureCurveClient(dealer, curveKeyPairOf(identity), serverEd25519PublicKey); // DEALER
//   (set options before bind/connect; ZMQ applies the mechanism at handshake time.)
// In a closed run the caller fills the AccessTokenRegistry from what peers publish (each peer's
// DHT record carries its token; the record is signed by the peer's identity key, so the
// registry is told which identity presented which token) before that peer connects; a token that
// arrives later admits the peer on its next reconnect (ZMQ reconnects every 100 ms by default).
//
// ZAP handler: a thread ("dedloc-zap") that owns a REP socket bound to inproc://zeromq.zap.01 in
// the given context; started (bound) when the constructor returns, stopped and joined by the
// destructor (it polls a stop flag every 100 ms). Only requests for the ZAP domain "dedloc"
// (set by configureCurveServer) are judged; other domains in the same context are accepted
// untouched. A "dedloc" request is accepted when the mechanism is CURVE and
//   open run:   always (the link is still encrypted);
//   closed run: the registry holds a token for the client's Curve key whose signature (lead
//               key), run id and validity (with ClockSkewSeconds) verify and whose bound Ed25519
//               key derives to that Curve key (binding).
// Refusals reply 400 (the client sees ZMQ_EVENT_HANDSHAKE_FAILED_AUTH with value 400) and are
// logged under "zap" with the reason. Throws dedloc::Error if inproc://zeromq.zap.01 is taken
// (one handler per context).
#include "net/PeerIdentity.h"
#include "security/AccessToken.h"
#include "security/Minisign.h"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace zmq {
class context_t;
class socket_t;
} // namespace zmq

namespace dedloc {

using CurveKey = std::array<unsigned char, 32>;

struct CurveKeyPair {
    CurveKey publicKey{};
    CurveKey secretKey{};
    CurveKeyPair() = default;
    CurveKeyPair(const CurveKeyPair &) = default;
    CurveKeyPair &operator=(const CurveKeyPair &) = default;
    ~CurveKeyPair(); // wipes the secret
};

[[nodiscard]] CurveKeyPair curveKeyPairOf(const PeerIdentity &identity);
// Throws dedloc::Error for a key that is not a valid Ed25519 point.
[[nodiscard]] CurveKey curvePublicKeyOf(const Ed25519PublicKey &ed25519PublicKey);

constexpr const char *ZapDomain = "dedloc";

// ZMQ_CURVE_SERVER=1, the server's secret key, ZAP domain "dedloc". For ROUTER sockets.
void configureCurveServer(zmq::socket_t &socket, const CurveKeyPair &own);
// The client's own key pair and the server's key derived from its Ed25519 identity. For DEALERs.
void configureCurveClient(zmq::socket_t &socket, const CurveKeyPair &own, const Ed25519PublicKey &serverIdentity);

// Tokens presented by peers, keyed by the Curve key of the presenting identity. Thread-safe.
class AccessTokenRegistry final {
  public:
    void offer(const Ed25519PublicKey &presenter, std::string token);
    void withdraw(const Ed25519PublicKey &presenter);
    struct Entry {
        Ed25519PublicKey presenter;
        std::string token;
    };
    [[nodiscard]] std::optional<Entry> find(const CurveKey &clientCurveKey) const;

  private:
    mutable std::mutex m_mutex;
    std::map<CurveKey, Entry> m_entries;
};

struct AccessPolicy {
    bool closed = false;               // open runs accept every (encrypted) client
    minisign::PublicKey lead;          // closed runs: the run's lead key (security/RunTrust.h)
    std::string runId;                 // closed runs: tokens must name this run
    std::function<std::int64_t()> now; // Unix seconds; defaults to the system clock
    std::int64_t skewSeconds = ClockSkewSeconds;
};

// The ZAP decision for one client Curve key under `policy` ("" = accepted, else the reason):
// open runs accept everyone; closed runs need a registry entry whose token verifies (lead key,
// run id, validity with skew) and is bound to the identity behind that Curve key. ZapHandler
// applies it at the handshake; the swarm applies it to the peers it is about to connect to.
[[nodiscard]] std::string judgeAccess(const AccessPolicy &policy, const AccessTokenRegistry *registry,
                                      const CurveKey &clientKey);

class ZapHandler final {
  public:
    // `registry` is shared with the code that fills it; required for closed runs, may be null for open runs.
    ZapHandler(zmq::context_t &context, AccessPolicy policy, std::shared_ptr<const AccessTokenRegistry> registry);
    ~ZapHandler();
    ZapHandler(const ZapHandler &) = delete;
    ZapHandler &operator=(const ZapHandler &) = delete;

    [[nodiscard]] std::uint64_t accepted() const { return m_accepted.load(); }
    [[nodiscard]] std::uint64_t refused() const { return m_refused.load(); }
    [[nodiscard]] std::string lastRefusal() const;

    // The decision for one client key ("" = accepted, else the reason); what the thread applies.
    [[nodiscard]] std::string judge(const CurveKey &clientKey) const;

  private:
    void loop(void *socket);

    // Logs a refusal, at most once per RefusalLogInterval for one (address, reason): a refused
    // ZeroMQ client reconnects every 100 ms and would flood the log. Called by the thread only.
    void noteRefusal(const std::string &address, const std::string &reason);

    AccessPolicy m_policy;
    std::shared_ptr<const AccessTokenRegistry> m_registry;
    struct Noted {
        std::chrono::steady_clock::time_point logged;
        std::uint64_t suppressed = 0;
    };
    std::map<std::string, Noted> m_noted; // address + reason (the thread's own)
    std::atomic<bool> m_stop{false};
    std::atomic<std::uint64_t> m_accepted{0};
    std::atomic<std::uint64_t> m_refused{0};
    mutable std::mutex m_mutex;
    std::string m_lastRefusal;
    std::thread m_thread;
};

} // namespace dedloc
