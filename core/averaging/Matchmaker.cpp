#include "averaging/Matchmaker.h"

#include "net/DataPlaneSecurity.h"
#include "averaging/GroupShares.h"
#include "averaging/ServiceClient.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"
#include "util/Clock.h"

#include <sodium.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <thread>

namespace dedloc {

namespace {

std::string randomGroupId(long epoch)
{
    unsigned char bytes[8];
    randombytes_buf(bytes, sizeof bytes);
    std::string id = "e"; // appended, not "e" + ...: GCC 12 warns falsely (-Wrestrict) on that
    id += std::to_string(epoch);
    id += '-';
    id += toHex(bytes, sizeof bytes);
    return id;
}

bool before(double deadlineA, const std::string &idA, double deadlineB, const std::string &idB)
{
    return deadlineA < deadlineB || (deadlineA == deadlineB && idA < idB);
}

void setWhy(std::string *why, const std::string &text)
{
    if (why)
        *why = text;
}

} // namespace

Matchmaker::Matchmaker(DhtNode &dht, PeerService *service, MatchSelf self, MatchmakingOptions options,
                       std::shared_ptr<const DataPlaneSecurity> security, std::shared_ptr<BanList> bans)
    : m_dht(dht), m_service(service), m_self(std::move(self)), m_options(options), m_security(std::move(security)),
      m_bans(std::move(bans)), m_holds(m_bans), m_bandwidth(m_self.bandwidth), m_clientMode(m_self.clientMode)
{
    if (m_self.clientMode)
        m_service = nullptr;
}

void Matchmaker::setStateDigest(std::string digest)
{
    std::lock_guard lock(m_digestMutex);
    m_stateDigest = std::move(digest);
}

// Whether a leader's refusal (follow's reason) holds for the whole epoch: another schema or run,
// a full group, or this peer banned there.
static bool refusedForGood(const std::string &why)
{
    for (const char *reason : {"schema", "full", "banned", "unknown run"})
        if (why.find(reason) != std::string::npos)
            return true;
    return false;
}

std::string Matchmaker::stateDigest() const
{
    std::lock_guard lock(m_digestMutex);
    return m_stateDigest;
}

std::optional<FormedGroup> Matchmaker::lead(long epoch, const std::vector<JoinRequest> &followers)
{
    FormedGroup g;
    g.leader = true;
    g.info.groupId = randomGroupId(epoch);
    g.info.epoch = epoch;
    g.info.members.push_back({m_self.peerId, m_self.allReduceEndpoint, m_bandwidth.load(), m_self.sender ? 1.0 : 0.0,
                              m_self.publicKey, 0, m_repair.load(), stateDigest()});
    for (const auto &f : followers)
        g.info.members.push_back({f.peerId, f.clientMode ? std::string() : f.allReduceEndpoint,
                                  f.clientMode ? 0.0 : f.bandwidth, f.sender ? 1.0 : 0.0, f.publicKey, 0, f.repair,
                                  f.stateDigest});
    std::sort(g.info.members.begin(), g.info.members.end(),
              [](const GroupMember &a, const GroupMember &b) { return a.peerId < b.peerId; });
    for (std::size_t i = 0; i < g.info.members.size(); ++i)
        if (g.info.members[i].peerId == m_self.peerId)
            g.myIndex = i;
    if (!assignShardShares(g.info.members, m_options.capShares)) {
        m_service->disband("no member of the group can reduce a shard");
        log::warning("match", "disbanded a group in which no member can reduce a shard (all in client mode)");
        return std::nullopt;
    }
    if (m_options.neverBegin) {
        log::warning("match", "holding " + std::to_string(followers.size()) + " follower(s) without a BEGIN (tests)");
        return std::nullopt;
    }
    m_service->begin(g.info);
    log::info("match", "led group " + g.info.groupId + " of " + std::to_string(g.info.members.size()) + " peers");
    return g;
}

std::optional<FormedGroup> Matchmaker::follow(const Declaration &leader, long epoch, const std::string &schema,
                                              std::size_t expected, const std::atomic<bool> &stop, std::string *why,
                                              Held *held, std::optional<Declaration> *askInstead,
                                              const std::function<void()> &onAccepted)
{
    *held = Held::No;
    ServiceClient client(leader.serviceEndpoint, m_security, leader.publicKey);
    JoinRequest request{m_self.runId,    epoch,        schema,           m_self.peerId,    m_self.allReduceEndpoint,
                        m_bandwidth.load(), m_clientMode.load(), m_self.sender, m_self.publicKey, m_repair.load(),
                        expected,           stateDigest()};
    client.send("join", joinToJson(request));
    auto reply = client.receive(m_options.requestTimeout);
    if (!reply && client.refusedAtHandshake()) {
        setWhy(why, "leader " + leader.peerId.substr(0, 8) + " refused the encrypted handshake"
                        + (m_security && m_security->closed() ? " (closed run: is this peer's access token valid?)" : ""));
        return std::nullopt;
    }
    if (!reply) {
        setWhy(why, "leader " + leader.peerId.substr(0, 8) + " did not answer");
        return std::nullopt;
    }
    const auto type = reply->header.at("t").get<std::string>();
    if (type == "refuse") {
        setWhy(why, "leader " + leader.peerId.substr(0, 8) + " refused: " + textOr(reply->header, "why", "?"));
        return std::nullopt;
    }
    if (type != "accept") {
        setWhy(why, "leader sent \"" + type + "\" instead of accept");
        return std::nullopt;
    }
    if (onAccepted)
        onAccepted();
    // Wait for BEGIN until the leader's deadline plus the request timeout, at most a window: a
    // leader that gathers longer (another --matchmaking-time) and has not begun by then is left
    // without blame. The deadline is read as the seconds it leaves on the leader's clock ("n",
    // the leader's time at sending), counted from the accept's arrival here: a clock that differs
    // from this peer's does not make an honest leader late.
    const double arrived = unixNow();
    double named = numberOr(reply->header, "d", leader.expiresAt);
    if (const double sent = numberOr(reply->header, "n", -1.0); sent > 0 && std::isfinite(sent) && std::isfinite(named))
        named = arrived + std::max(0.0, named - sent);
    const bool waitsItsDeadline = named <= unixNow() + m_options.window;
    const double leaderDeadline = waitsItsDeadline ? named : unixNow() + m_options.window;
    while (!stop.load()) {
        const double left = leaderDeadline + m_options.requestTimeout - unixNow();
        if (left <= 0)
            break;
        auto next = client.receive(std::min(left, 0.2));
        if (m_bans && m_bans->isBanned(leader.peerId, unixNow())) { // banned meanwhile: left, BEGIN or not
            setWhy(why, "left leader " + leader.peerId.substr(0, 8) + ": banned while it gathered");
            return std::nullopt;
        }
        if (!next)
            continue;
        const auto t = next->header.at("t").get<std::string>();
        if (t == "disband") {
            setWhy(why, "leader disbanded: " + textOr(next->header, "why", "?"));
            // A DISBAND naming the leader its group merged into is a merge; any other leaves
            // this peer little of its window when it comes late.
            *held = next->header.contains("l") ? Held::No : Held::Late;
            if (askInstead && next->header.contains("l")) {
                try {
                    // Ordered before the leader that names it: gathering now, until no later than
                    // that leader's own deadline.
                    auto s = suggestedLeaderFromJson(next->header.at("l"), epoch, schema);
                    if (s.expiresAt <= unixNow() || s.expiresAt > leaderDeadline)
                        throw ProtocolError("its deadline is not before the suggesting leader's");
                    *askInstead = std::move(s);
                } catch (const std::exception &e) {
                    log::warning("match", std::string("ignored the leader's suggestion: ") + e.what());
                    *held = Held::Late;
                }
            }
            return std::nullopt;
        }
        if (t != "begin")
            continue;
        try {
            FormedGroup g;
            g.info = groupFromJson(next->header);
            if (g.info.epoch != epoch)
                throw ProtocolError("BEGIN for epoch " + std::to_string(g.info.epoch));
            bool found = false;
            for (std::size_t i = 0; i < g.info.members.size(); ++i)
                if (g.info.members[i].peerId == m_self.peerId) {
                    g.myIndex = i;
                    found = true;
                }
            if (!found)
                throw ProtocolError("BEGIN does not list this peer");
            // This peer as it joined (a repairing trainer takes others' state; GroupShares.h).
            if (const auto otherwise = joinedOtherwise(g.info.members[g.myIndex], request); !otherwise.empty())
                throw ProtocolError(otherwise);
            if (std::none_of(g.info.members.begin(), g.info.members.end(),
                             [&](const GroupMember &m) { return m.peerId == leader.peerId; }))
                throw ProtocolError("BEGIN does not list the leader");
            checkShares(g.info.members, m_options.capShares);
            log::info("match", "joined group " + g.info.groupId + " of " + std::to_string(g.info.members.size())
                                   + " peers led by " + leader.peerId.substr(0, 8));
            return g;
        } catch (const std::exception &e) {
            setWhy(why, std::string("bad BEGIN from the leader (never asked again this epoch): ") + e.what());
            *held = Held::Broke;
            return std::nullopt;
        }
    }
    if (stop.load()) {
        setWhy(why, "stopped");
    } else if (waitsItsDeadline) {
        setWhy(why, "leader " + leader.peerId.substr(0, 8) + " never began the group (never asked again this epoch)");
        *held = Held::Broke;
    } else {
        setWhy(why, "leader " + leader.peerId.substr(0, 8) + " did not begin within this peer's window, gathering "
                        "longer (never asked again this epoch)");
        *held = Held::Late;
    }
    return std::nullopt;
}

// One search's view of the candidates: the declarations last read from the DHT, the leaders
// suggested by leaders that merged into them (their followers' views of the DHT may miss them),
// and the candidates that refused or failed, permanently (another schema, full, banned) or until
// a short back-off passes (not leading right now: it may lead again after its own attempt).
struct Matchmaker::SearchView {
    std::string key;
    bool reachable = false; // this peer gathers (not in client mode) for the whole search
    std::vector<Declaration> declarations, suggested;
    std::map<std::string, double> retryAfter;
    double lastFetch = 0.0;
};

void Matchmaker::refresh(SearchView &view, double now) const
{
    if (now - view.lastFetch < m_options.fetchInterval)
        return;
    view.lastFetch = now;
    view.declarations.clear();
    for (const auto &record : m_dht.fetch(view.key, 0.5)) {
        try {
            view.declarations.push_back(parseDeclaration(record));
        } catch (const std::exception &e) {
            log::warning("match", "ignored a declaration of " + record.peerId.substr(0, 8) + ": " + e.what());
        }
    }
}

// The leader worth asking: reachable, same epoch and schema, still gathering, ordered before this
// peer (its deadline `deadline`), or, with `anyOrder`, any such candidate.
std::optional<Declaration> Matchmaker::pickLeader(SearchView &view, long epoch, const std::string &schema, double now,
                                                  double deadline, bool anyOrder,
                                                  const std::vector<JoinRequest> *followers) const
{
    if (m_options.neverBegin)
        return std::nullopt; // tests: a holder only gathers
    // A merge target is not asked in the leader's last request timeout: a silent one would make
    // its BEGIN come after its followers gave up on it.
    if (followers && now + m_options.requestTimeout >= deadline)
        return std::nullopt;
    const Declaration *best = nullptr;
    const auto isFollower = [&](const std::string &id) {
        return followers && std::any_of(followers->begin(), followers->end(),
                                        [&](const JoinRequest &f) { return f.peerId == id; });
    };
    const auto askable = [&](const Declaration &d) {
        if (d.peerId == m_self.peerId || d.clientMode || d.epoch != epoch || d.schema != schema
            || d.expiresAt <= now || (view.retryAfter.count(d.peerId) && view.retryAfter[d.peerId] > now)
            || isFollower(d.peerId))
            return false;
        if (m_bans && m_bans->isBanned(d.peerId, now))
            return false; // it sent us invalid data: we neither follow it nor average with it
        if (m_security && !m_security->admission(d.publicKey).empty()) {
            // Closed run: never ask a peer whose access token we have not verified.
            view.retryAfter[d.peerId] = now + 1.0;
            return false;
        }
        return true;
    };
    if (auto part = partLeader(view, epoch, schema, now, deadline)) {
        if (part->peerId == m_self.peerId) {
            if (followers || !anyOrder)
                return std::nullopt; // it leads its part: it asks nobody, nor merges into another part
        } else if (askable(*part)) {
            return part;
        }
    }
    for (const auto *list : {&view.declarations, &view.suggested}) {
        if (followers && list == &view.suggested)
            break; // a leader merges only into one its own view of the DHT knows
        for (const auto &d : *list) {
            if (!askable(d))
                continue;
            if (!anyOrder && !before(d.expiresAt, d.peerId, deadline, m_self.peerId))
                continue;
            if (!best || before(d.expiresAt, d.peerId, best->expiresAt, best->peerId))
                best = &d;
        }
    }
    return best ? std::optional<Declaration>(*best) : std::nullopt;
}

// More reachable peers declared at this epoch than one group holds: in (deadline, peer id) order
// they are cut into consecutive parts of targetGroupSize, and the first peer of each part leads
// it (Matchmaker.h). Returns the leader of this peer's part (this peer's own declaration when it
// leads it), nothing when one group holds the declared peers or this peer does not gather.
std::optional<Declaration> Matchmaker::partLeader(const SearchView &view, long epoch, const std::string &schema,
                                                  double now, double deadline) const
{
    if (!view.reachable || m_options.targetGroupSize < 2)
        return std::nullopt;
    std::vector<const Declaration *> order;
    for (const auto &d : view.declarations)
        if (d.peerId != m_self.peerId && !d.clientMode && d.epoch == epoch && d.schema == schema && d.expiresAt > now)
            order.push_back(&d);
    if (order.size() + 1 <= m_options.targetGroupSize)
        return std::nullopt;
    std::sort(order.begin(), order.end(), [](const Declaration *a, const Declaration *b) {
        return before(a->expiresAt, a->peerId, b->expiresAt, b->peerId);
    });
    const auto mine = static_cast<std::size_t>(
        std::count_if(order.begin(), order.end(),
                      [&](const Declaration *d) { return before(d->expiresAt, d->peerId, deadline, m_self.peerId); }));
    const std::size_t first = mine - mine % m_options.targetGroupSize;
    if (first == mine) {
        Declaration self;
        self.peerId = m_self.peerId;
        return self;
    }
    return *order[first];
}

std::optional<FormedGroup> Matchmaker::formGroup(long epoch, const std::string &schema,
                                                 const std::function<std::size_t()> &expectedPeers,
                                                 const std::atomic<bool> &stop, std::string *why)
{
    const double started = unixNow();
    double deadline = started + m_options.window;
    double giveUp = deadline + m_options.requestTimeout;
    bool declaredAgain = false; // after a leader that never began (Matchmaker.h)
    SearchView view;
    view.key = matchmakingKey(m_self.runId, epoch, schema); // also other epochs' (a ring): filtered by epoch
    const bool reachable = m_service != nullptr && !m_clientMode.load(); // for the whole search
    view.reachable = reachable;

    if (reachable)
        m_service->openGather({epoch, schema, m_options.targetGroupSize - 1, deadline});
    Declaration mine{m_self.peerId, epoch, schema, reachable ? m_service->endpoint() : std::string(),
                     deadline - m_options.declareEarlyBy, !reachable};
    if (!m_dht.publish(view.key, encodeDeclaration(mine), m_options.window + 2 * m_options.requestTimeout, 1.0))
        log::warning("match", "matchmaking declaration not confirmed by the DHT; looking for a group anyway");

    // From then on a peer nobody joined also asks leaders ordered after it (below).
    double askAnyFrom = deadline - m_options.window / 2;
    // A leader that accepted and never began (or sent a BEGIN refused) held this peer, and every
    // other it held, for most of their windows: once per search, when less than half a window is
    // left, this peer declares itself again with that much (Matchmaker.h), keeping the order of
    // asking for the first half of it.
    const auto declareAgainIfHeld = [&](const std::string &leaderId, const std::string &reason, Held held) {
        if (stop.load() || held == Held::No)
            return;
        if (held == Held::Broke)
            m_holds.held(leaderId, epoch, reason, unixNow());
        const double now = unixNow();
        if (declaredAgain || now + m_options.window / 2 <= deadline)
            return; // once per search, and only where less than half a window is left
        declaredAgain = true;
        deadline = now + m_options.window / 2;
        giveUp = deadline + m_options.requestTimeout;
        askAnyFrom = now + m_options.window / 4;
        mine.expiresAt = deadline;
        if (!m_dht.publish(view.key, encodeDeclaration(mine), m_options.window + 2 * m_options.requestTimeout, 1.0))
            log::warning("match", "second declaration not confirmed by the DHT; looking for a group anyway");
        log::info("match", m_self.peerId.substr(0, 8) + " declares itself again until "
                               + std::to_string(m_options.window / 2) + " s from now, without that leader");
    };

    std::string lastWhy = "no other peer declared itself for epoch " + std::to_string(epoch);
    while (!stop.load()) {
        const double now = unixNow();
        if (now >= giveUp)
            break;
        refresh(view, now);
        std::optional<Declaration> leader;
        if (reachable) {
            const auto followers = m_service->followers();
            if (!followers.empty()) {
                if (readyToLead(followers, expectedPeers, now >= deadline))
                    return lead(epoch, followers);
                // Two leaders at one epoch would split the swarm: a leader ordered before this
                // one is asked once, with this one's gather kept open (averaging/Matchmaker.h).
                if (auto target = pickLeader(view, epoch, schema, now, deadline, false, &followers)) {
                    view.retryAfter[target->peerId] = 1e300;
                    std::string mergeWhy;
                    Held mergeHeld = Held::No;
                    if (auto g = mergeInto(*target, epoch, schema, expectedPeers, stop, &mergeWhy, &mergeHeld))
                        return g;
                    if (m_service->followers().empty()) // its followers are gone: held too
                        declareAgainIfHeld(target->peerId, mergeWhy, mergeHeld);
                    if (m_service->followers().empty() && unixNow() < deadline)
                        m_service->openGather({epoch, schema, m_options.targetGroupSize - 1, deadline});
                    continue;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
                continue;
            }
        }
        // In the second half of the window a peer that nobody joined also asks leaders ordered
        // after it: its declaration may not have reached the others in time (DHT lag), and they
        // may already follow a later leader. No deadlock: it closed its own gather first, so
        // whoever asks it meanwhile is refused and retries.
        leader = pickLeader(view, epoch, schema, now, deadline, !reachable || now >= askAnyFrom);
        if (!leader) {
            if (reachable && readyToLead({}, expectedPeers, now >= deadline))
                return lead(epoch, {});
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            continue;
        }
        if (reachable && !m_service->closeGatherIfEmpty())
            continue; // someone joined me meanwhile: lead them (checked at the top)
        log::debug("match", m_self.peerId.substr(0, 8) + " asks " + leader->peerId.substr(0, 8) + " ("
                                + std::to_string(view.declarations.size()) + " declarations)");
        std::string followWhy;
        Held held = Held::No;
        std::optional<Declaration> suggestion;
        if (auto g = follow(*leader, epoch, schema, expectedPeers ? expectedPeers() : 0, stop, &followWhy, &held,
                            &suggestion))
            return g;
        const auto known = [&](const std::string &id) {
            return std::any_of(view.declarations.begin(), view.declarations.end(),
                               [&](const Declaration &d) { return d.peerId == id; });
        };
        // A suggestion is taken once, and only for a leader this peer's view of the DHT lacks.
        if (suggestion && !known(suggestion->peerId) && view.retryAfter.count(suggestion->peerId) == 0)
            view.suggested.push_back(*suggestion);
        // A leader that accepted and then never began, began a group it is not in, or disbanded
        // without naming where its group went, may be holding this peer on purpose: it is not
        // asked again for this epoch; nor is one known only from a suggestion.
        const bool permanent = refusedForGood(followWhy) || held != Held::No || !known(leader->peerId);
        view.retryAfter[leader->peerId] = permanent ? 1e300 : unixNow() + 0.25;
        lastWhy = followWhy;
        log::info("match", m_self.peerId.substr(0, 8) + ": " + followWhy);
        declareAgainIfHeld(leader->peerId, followWhy, held);
        if (reachable && unixNow() < deadline)
            m_service->openGather({epoch, schema, m_options.targetGroupSize - 1, deadline});
    }
    log::debug("match", m_self.peerId.substr(0, 8) + " gives up with " + std::to_string(view.declarations.size())
                            + " declarations seen");
    if (reachable) {
        const auto followers = m_service->followers();
        if (followers.size() + 1 >= m_options.minGroupSize && !stop.load())
            return lead(epoch, followers);
        m_service->disband("the leader gave up");
    }
    setWhy(why, stop.load() ? std::string("stopped") : lastWhy);
    return std::nullopt;
}

// Asks `target` (ordered before this leader) to take this leader, keeping the gather open; only once it
// accepts are the followers sent DISBAND naming it: a target that refuses, is silent or began costs nothing.
std::optional<FormedGroup> Matchmaker::mergeInto(const Declaration &target, long epoch, const std::string &schema,
                                                 const std::function<std::size_t()> &expectedPeers,
                                                 const std::atomic<bool> &stop, std::string *whyNot, Held *held)
{
    std::string why;
    const auto accepted = [&] {
        log::info("match", m_self.peerId.substr(0, 8) + " merges its group into the group of "
                               + target.peerId.substr(0, 8) + ", ordered before it");
        m_service->disband("merging into the group of " + target.peerId.substr(0, 8), &target);
    };
    auto g = follow(target, epoch, schema, expectedPeers ? expectedPeers() : 0, stop, &why, held, nullptr, accepted);
    if (!g)
        log::info("match", m_self.peerId.substr(0, 8) + " did not merge into " + target.peerId.substr(0, 8) + ": " + why);
    if (whyNot)
        *whyNot = why;
    return g;
}

// Whether a leader with `followers` forms its group now: at the target size, once every peer expected at
// this epoch joined (our count, or a follower's if larger), or when due; never below the minimum size.
bool Matchmaker::readyToLead(const std::vector<JoinRequest> &followers,
                             const std::function<std::size_t()> &expectedPeers, bool due) const
{
    const std::size_t size = followers.size() + 1;
    if (size < m_options.minGroupSize)
        return false;
    std::size_t expected = expectedPeers ? expectedPeers() : 0;
    for (const auto &f : followers)
        expected = std::max(expected, std::min(f.expected, m_options.targetGroupSize));
    return size >= m_options.targetGroupSize || (expected > 0 && size >= expected) || due;
}

} // namespace dedloc
