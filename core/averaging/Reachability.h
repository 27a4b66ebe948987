#pragma once
// Can other peers open connections to this one? A peer behind a home router's NAT cannot accept
// any, and must run in client mode (it only connects out); one with a port forward or a public
// address can lead groups, reduce shards and donate state. The peer finds out by itself, as
// libp2p's AutoNAT does: it asks up to `maxCheckers` reachable peers (the state donors it reads
// from the DHT) to connect back to the service endpoint it advertises, over a fresh connection,
// and to say whether that worked (docs/PROTOCOL.md "Reachability and port forwards").
//
// The checker (PeerService, on its own thread) connects back to the port of the advertised
// tcp:// endpoint at the address the request came from, never elsewhere (so nobody can aim
// dial-backs at a third party), and in secured runs only as a client of the key of the requesting
// connection (CURVE). Behind a home router that address is the router's: only a port forward
// leads on to the peer. Its probe is a `ping` answered by `pong`; a refused CURVE handshake also
// proves that the connection reached the peer (only a refusal by its authentication, ZAP: a
// listener that merely drops the connection proves nothing). The answer names the endpoint it dialled (`at`).
// A request without a TCP port, or whose address ZeroMQ cannot tell, gets an answer that is not
// sure (`sure` false): it counts as no answer.
//
// Verdict: Reachable if any checker reached the endpoint (`reachedAt`: where); Unreachable if at
// least one checker answered surely and none reached it; Unknown otherwise (nobody to ask, nobody
// answered). A checker on the same LAN sees a LAN address and may call reachable a peer that the
// internet cannot reach: ask checkers outside it (the run's server is).
//
// Threads: checkReachability() and dialBack() block the calling thread for at most their timeout
// (checkers are asked at once, in parallel); `stop` ends checkReachability() within 100 ms.
#include "averaging/SwarmMessages.h"

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace dedloc {

class DataPlaneSecurity;

enum class Reachability { Reachable, Unreachable, Unknown };

[[nodiscard]] const char *reachabilityName(Reachability r); // "reachable", "unreachable", "unknown"

struct ReachabilityVerdict {
    Reachability reachability = Reachability::Unknown;
    std::string why; // one sentence for logs and the window
    int checkersAsked = 0;
    std::string reachedAt; // Reachable: the endpoint a checker connected to
};

struct ReachabilityOptions {
    std::size_t maxCheckers = 3;
    double timeout = 8.0; // seconds for the whole check (the checker waits dialBackTimeout)
};

// The seconds a checker waits for the dial-back's pong.
inline constexpr double DialBackTimeout = 3.0;

// Asks `checkers` (other peers' donor adverts; this peer's own is skipped) whether `self`'s
// service endpoint can be reached. `security` null: plaintext (unit tests).
[[nodiscard]] ReachabilityVerdict checkReachability(const std::vector<DonorAdvert> &checkers, const ReachRequest &self,
                                                    const std::shared_ptr<const DataPlaneSecurity> &security,
                                                    const std::atomic<bool> &stop, ReachabilityOptions options = {});

// The checker's side: connects to `endpoint` as a client of `serverKey` and sends a ping. True if
// the peer answered (pong or a refused handshake) within `timeout`; otherwise false with the
// reason in *why.
[[nodiscard]] bool dialBack(const std::string &endpoint, const std::array<unsigned char, 32> &serverKey,
                            const std::shared_ptr<const DataPlaneSecurity> &security, double timeout, std::string *why);

// The endpoint a checker dials for `advertised`, seen from `observedAddress` (the IPv4 address
// the request came from): "tcp://<observedAddress>:<port of advertised>"; "" when `advertised`
// is no tcp://host:port endpoint or `observedAddress` is empty or not an IPv4 address.
[[nodiscard]] std::string dialBackTarget(const std::string &advertised, const std::string &observedAddress);

} // namespace dedloc
