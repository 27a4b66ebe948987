#pragma once
// DeDLOC matchmaking: peers about to average find each other and agree on one group with one
// member order (docs/PROTOCOL.md "Matchmaking"; hivemind's leader/follower scheme, decentralised).
//
// A peer looking for a group for (epoch, schema) declares itself on the DHT under
// matchmakingKey(run, epoch, schema) with its deadline (now + window). Reachable peers gather
// followers on their service socket (averaging/PeerService.h) until that deadline. Candidates are
// ordered by (deadline, peer id): a peer only ever asks a candidate that orders BEFORE itself,
// so two peers never wait on each other (no deadlock), and the earliest peer ends up leading.
// Where more reachable peers declared than one group holds, the declarations in that order are
// cut into consecutive parts of the target group size: a peer first asks the first peer of its
// own part, and that one asks nobody ordered before it (nor merges its group into another): it
// gathers its part, several groups form at once, and no single peer receives every request.
// Declarations that arrive later mostly come later in the order, so they add parts at the end;
// where views differ, a refusal sends the asker back to the rules below.
// A leader forms the group when it reaches the target group size, when every peer expected at
// this epoch (from the progress records) has joined, or at its deadline if it has at least the
// minimum group size; it draws a random group id, sorts members by peer id and sends BEGIN to
// all. A peer that nobody joined by half its window also asks leaders ordered after it (its
// declaration may have reached the others late). A leader with followers that is not ready to
// lead and sees (on the DHT) a leader ordered before it asks that one once, its own gather still
// open; only if it is accepted does it disband its followers, naming that leader (their views of
// the DHT may lack it), so that one epoch has one group where the views allow, and a refusal or
// silence costs its followers nothing (hivemind's leaders do the same). A follower asks a named
// leader once, and only one its own view lacks. A leader without followers at its deadline,
// or a follower refused or left waiting past
// the leader's deadline plus the request timeout, looks for any other leader until its own
// deadline plus the request timeout, then gives up (the caller steps on local gradients).
// A leader that accepted a peer and never began (crashed, or holds it on purpose), or sent a BEGIN
// the peer refused, leaves it little of its window, and every other peer it held alike (a leader
// that merged into it included): once per search, when less than half a window is left, the peer
// declares itself again with a new deadline half a window away, asking only leaders ordered
// before it for the first half of that, and looks on (the held peers then form their group
// without that leader, which none of them asks again that epoch).
// Client-mode peers never lead: they have no service socket and only ask. A peer this one has
// banned (averaging/BanList.h: it sent invalid data) is neither asked nor accepted as a follower,
// and a follower leaves a leader banned while it waits for BEGIN (and looks on, as if refused).
// Security: joins go over CURVE to the key that signed the leader's declaration; in a closed
// run a candidate whose access token this peer has not verified is never asked (a peer without
// a token cannot lead), and a refused handshake is reported as such.
// BEGIN lists every member's key beside its endpoint (checked against the joiner's connection
// by the leader's PeerService).
//
// Threads: formGroup() runs on the calling thread (the averaging thread) and returns within about
// 2 x window + 2 x requestTimeout (a leader asked late may gather until a window after it was
// asked), plus half a window and a request timeout after a leader that never began; sooner when
// `stop` becomes true.
#include "net/DhtNode.h"
#include "averaging/LeaderHolds.h"
#include "averaging/PeerService.h"
#include "averaging/SwarmMessages.h"

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dedloc {

struct MatchmakingOptions {
    double window = 5.0;            // seconds a leader gathers at most (reference: 5-15 s)
    double requestTimeout = 3.0;    // seconds (reference default)
    std::size_t minGroupSize = 2;
    std::size_t targetGroupSize = 16;
    double fetchInterval = 0.2;     // seconds between DHT reads of the declarations
    // Open runs: no member's shard share above twice an even one (averaging/LoadBalancing.h,
    // fairShareCap), as the leader assigns them and as every follower checks its BEGIN.
    bool capShares = false;
    // Tests only (the hostile peer of tests/): asks no leader, accepts joins and never begins, so
    // that its followers wait for a BEGIN that never comes; `declareEarlyBy` seconds: declares a
    // deadline that much before its gather's (ordered before the others, it is asked first,
    // and its accept still names the later deadline).
    bool neverBegin = false;
    double declareEarlyBy = 0.0;
};

struct MatchSelf {
    std::string peerId;
    std::string runId;
    std::string allReduceEndpoint;  // "" in client mode
    double bandwidth = -1.0;        // declared upload bandwidth (any unit shared by the swarm)
    bool clientMode = false;
    bool sender = true;             // false: auxiliary peer
    std::array<unsigned char, 32> publicKey{}; // Ed25519 identity key (peerId derives from it)
};

struct FormedGroup {
    GroupInfo info;
    std::size_t myIndex = 0;
    bool leader = false;
};

class Matchmaker final {
public:
    // `service` is null in client mode. Both must outlive the matchmaker. `security` null:
    // plaintext (unit tests only). `bans`: leaders it bans are never asked (null: none); give
    // the service the same list, so that banned peers cannot join this peer's groups either.
    // A leader that held this peer (accepted it, then never began by the deadline it named, or
    // sent a BEGIN it refused) is struck there, and banned at its third hold (LeaderHolds.h).
    Matchmaker(DhtNode &dht, PeerService *service, MatchSelf self, MatchmakingOptions options,
               std::shared_ptr<const DataPlaneSecurity> security = nullptr, std::shared_ptr<BanList> bans = nullptr);

    // `expectedPeers()`: peers (this one included) that will average at this epoch, 0 if
    // unknown; asked again while gathering (progress records arrive meanwhile).
    // Returns nothing (with the reason in *why) when no group of at least the minimum size formed.
    std::optional<FormedGroup> formGroup(long epoch, const std::string &schema,
                                         const std::function<std::size_t()> &expectedPeers,
                                         const std::atomic<bool> &stop, std::string *why = nullptr);

    [[nodiscard]] const MatchmakingOptions &options() const { return m_options; }
    // Ask the groups this peer joins or leads from now on for a state round (its parameters may
    // differ from the swarm's: JoinRequest::repair). Thread-safe.
    void setRepair(bool repair) { m_repair = repair; }
    // The state digest this peer's joins and groups carry from now on (JoinRequest::stateDigest;
    // "" for none). Thread-safe.
    void setStateDigest(std::string digest);
    // The upload bandwidth (MatchSelf::bandwidth's unit) this peer's joins and groups carry
    // from now on: a rate it measured replaces the declared one. Thread-safe.
    void setBandwidth(double bandwidth) { m_bandwidth = bandwidth; }
    [[nodiscard]] double bandwidth() const { return m_bandwidth.load(); }
    // Others cannot connect to this peer after all (a reachability check that answered late):
    // from the next search on it joins as a client (no endpoint, no shard) and never gathers or
    // leads; a search under way keeps its own gather to its end. One way only. Thread-safe.
    void becomeClient() { m_clientMode = true; }
    [[nodiscard]] bool clientMode() const { return m_clientMode.load(); }

private:
    // How a follow() without a group ended, for the search: whether the leader accepted this
    // peer and then held it (it declares itself again), and whether the leader broke the
    // protocol doing so (a strike: LeaderHolds.h).
    enum class Held {
        No,        // refused, silent, stopped, or a DISBAND naming a leader to ask instead
        Late,      // a DISBAND without one, or no BEGIN within this peer's window from a leader
                   // that named a later deadline: no fault shown
        Broke,     // no BEGIN by the deadline the leader named (plus the request timeout), or a
                   // BEGIN this peer refused
    };
    std::optional<FormedGroup> lead(long epoch, const std::vector<JoinRequest> &followers);
    // Joins `leader` and waits for its BEGIN; a DISBAND naming a leader to ask instead sets
    // *askInstead. `held` (not null) says how a search without a group ended.
    // `onAccepted` runs once the leader has accepted.
    std::optional<FormedGroup> follow(const Declaration &leader, long epoch, const std::string &schema, std::size_t expected,
                                      const std::atomic<bool> &stop, std::string *why, Held *held,
                                      std::optional<Declaration> *askInstead = nullptr,
                                      const std::function<void()> &onAccepted = {});
    // `whyNot`, when not null, receives why the merge did not happen; `held` (not null) as follow's.
    std::optional<FormedGroup> mergeInto(const Declaration &target, long epoch, const std::string &schema,
                                         const std::function<std::size_t()> &expectedPeers, const std::atomic<bool> &stop,
                                         std::string *whyNot, Held *held);
    struct SearchView;
    void refresh(SearchView &view, double now) const;
    [[nodiscard]] std::optional<Declaration> partLeader(const SearchView &view, long epoch, const std::string &schema,
                                                        double now, double deadline) const;
    // `followers` given: a merge target, never one of them nor one known only from a suggestion.
    [[nodiscard]] std::optional<Declaration> pickLeader(SearchView &view, long epoch, const std::string &schema, double now,
                                                        double deadline, bool anyOrder,
                                                        const std::vector<JoinRequest> *followers = nullptr) const;
    [[nodiscard]] bool readyToLead(const std::vector<JoinRequest> &followers,
                                   const std::function<std::size_t()> &expectedPeers, bool due) const;

    DhtNode &m_dht;
    PeerService *m_service;
    MatchSelf m_self;
    MatchmakingOptions m_options;
    std::shared_ptr<const DataPlaneSecurity> m_security;
    std::shared_ptr<BanList> m_bans;
    LeaderHolds m_holds; // after m_bans
    std::atomic<bool> m_repair{false};
    mutable std::mutex m_digestMutex;
    std::string m_stateDigest; // guarded by m_digestMutex
    [[nodiscard]] std::string stateDigest() const;
    std::atomic<double> m_bandwidth; // starts as MatchSelf::bandwidth
    std::atomic<bool> m_clientMode;  // starts as MatchSelf::clientMode
};

} // namespace dedloc
