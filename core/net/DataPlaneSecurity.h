#pragma once
// One peer's data-plane security (docs/PROTOCOL.md "Data-plane security"): its CurveZMQ key pair
// (derived from its identity, net/CurveSecurity.h), the run's access policy (open or closed) and
// the registry of access tokens the swarm has seen in signed progress records. The swarm's
// socket owners (AllReduceEndpoint, PeerService, ServiceClient) take it as a shared pointer:
//   - a context that binds a ROUTER first starts a ZAP handler (startZap) and configures the
//     ROUTER as a CURVE server before bind (configureServer);
//   - every DEALER is a CURVE client of the peer it connects to, whose Ed25519 key it must know
//     (configureClient); the key comes from the signed DHT record that carried the endpoint, or
//     from the leader's BEGIN (where it was checked against the joiner's connection).
// A null pointer instead of this object means plaintext links: only unit tests and the
// all-reduce benchmark (--curve off) use that; SwarmPeer always passes one.
//
// Closed runs: a peer takes part only with a token that the run's lead key signed for its own
// identity key, for this run, within its validity (security/AccessToken.h). admitRecord() checks
// the token a peer published in its progress record and, if it verifies, offers it to the
// registry so that this peer's ZAP handlers admit the peer's connections; admission() tells
// whether a peer we are about to connect to is admitted (a server without a token is never
// asked, so a tokenless peer cannot lead a group or donate state).
//
// Threads: every method is thread-safe (the registry locks; refusal notes lock).
#include "net/CurveSecurity.h"

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace zmq {
class message_t;
}

namespace dedloc {

class DataPlaneSecurity final {
  public:
    // `policy.closed`: needs policy.lead and policy.runId.
    DataPlaneSecurity(const PeerIdentity &identity, AccessPolicy policy);

    [[nodiscard]] bool closed() const { return m_policy.closed; }
    [[nodiscard]] const Ed25519PublicKey &publicKey() const { return m_publicKey; }
    [[nodiscard]] const AccessPolicy &policy() const { return m_policy; }

    // One per ZeroMQ context, before its first server socket binds; destroy it after the
    // context's sockets are closed and before the context.
    [[nodiscard]] std::unique_ptr<ZapHandler> startZap(zmq::context_t &context) const;
    void configureServer(zmq::socket_t &socket) const;
    // Throws dedloc::Error if `server` is not a valid Ed25519 key.
    void configureClient(zmq::socket_t &socket, const Ed25519PublicKey &server) const;

    // "" if `peer` may take part (always in open runs), else the reason.
    [[nodiscard]] std::string admission(const Ed25519PublicKey &peer) const;
    // Checks `token` (may be empty) published by `presenter` in a signed record; if it verifies,
    // the registry learns it and true is returned. A refusal is logged once per peer and token.
    // Open runs: always true, nothing is stored.
    bool admitRecord(const Ed25519PublicKey &presenter, const std::string &token);

    // The Curve key of the client that sent `message` on a CURVE server socket (the ZAP
    // handler's User-Id), or nothing (plaintext socket, or no ZAP answer attached).
    [[nodiscard]] static std::optional<CurveKey> senderKey(const zmq::message_t &message);

  private:
    CurveKeyPair m_own;
    Ed25519PublicKey m_publicKey{};
    AccessPolicy m_policy;
    std::shared_ptr<AccessTokenRegistry> m_registry = std::make_shared<AccessTokenRegistry>();
    mutable std::mutex m_mutex;
    std::set<std::string> m_noted; // peer id + token whose refusal was logged
};

} // namespace dedloc
