#pragma once
// Can other peers open connections to this one? A peer behind a home router's NAT cannot accept
// any, and must run in client mode (it only connects out); one with a port forward or a public
// address can lead groups, reduce shards and donate state. The peer finds out by itself, as
// libp2p's AutoNAT does: it asks up to `maxCheckers` reachable peers (the state donors it reads
// from the DHT) to connect back to the service endpoint it advertises, over a fresh connection,
// and to say whether that worked (docs/PROTOCOL.md "Reachability and port forwards").
//
// The checker (PeerService, on its own thread) connects back only to a tcp:// endpoint whose host
// is the address the request came from (so a peer cannot aim dial-backs at third parties) and,
// in secured runs, only to the key of the requesting connection (CURVE). Its probe is a `ping`
// answered by `pong`; a refused CURVE handshake also proves that the connection reached the peer.
// An endpoint announced under a host name, or at another address than the one the request came
// from, gets an answer that is not sure (`sure` false): it counts as no answer.
//
// Verdict: Reachable if any checker reached the endpoint; Unreachable if at least one checker
// answered surely and none reached it; Unknown otherwise (nobody to ask, nobody answered).
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

// "host" of "tcp://host:port" ("" for anything else).
[[nodiscard]] std::string endpointHost(const std::string &endpoint);

} // namespace dedloc
