#include "averaging/GroupSeal.h"

#include "averaging/PeerService.h"
#include "averaging/SealRelay.h"
#include "util/Clock.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>
#include <tuple>

namespace dedloc {

int informed(const GroupRecord &r) { return !r.seal.empty() ? 2 : r.digest.empty() && !r.ended ? 0 : 1; }

std::vector<GroupRecord> absorb(RecordBook &book, std::vector<GroupRecord> records, long epoch)
{
    for (auto &r : records) {
        if (r.epoch != epoch)
            continue;
        auto [it, fresh] = book.try_emplace(r.peerId, r);
        if (!fresh && informed(r) >= informed(it->second))
            it->second = std::move(r);
    }
    std::vector<GroupRecord> all;
    all.reserve(book.size());
    for (const auto &[peer, r] : book)
        all.push_back(r);
    return all;
}

std::vector<const GroupRecord *> rankedSeals(const std::vector<GroupRecord> &records, long epoch)
{
    std::vector<std::pair<double, const GroupRecord *>> seals;
    for (const auto &r : records)
        if (r.epoch == epoch && !r.seal.empty()) {
            double weight = 0.0;
            for (const auto &e : r.seal)
                weight += static_cast<double>(e.weight);
            seals.emplace_back(weight, &r);
        }
    std::sort(seals.begin(), seals.end(), [](const auto &a, const auto &b) {
        return std::tuple(-a.first, -static_cast<long>(a.second->seal.size()), a.second->peerId)
               < std::tuple(-b.first, -static_cast<long>(b.second->seal.size()), b.second->peerId);
    });
    std::vector<const GroupRecord *> ranked;
    for (const auto &[weight, r] : seals)
        ranked.push_back(r);
    return ranked;
}

std::optional<std::vector<GroupView>> sealedViews(const GroupRecord &seal, const std::vector<GroupView> &views,
                                                  const GroupRecord &mine, std::string *why)
{
    std::vector<GroupView> chosen;
    for (const auto &e : seal.seal) {
        if (e.groupId == mine.groupId && e.digest == mine.digest && e.weight == mine.weight) {
            chosen.push_back({e.groupId, false, e.weight, mine.members, e.digest, 1, {}});
            continue;
        }
        const auto v = std::find_if(views.begin(), views.end(), [&](const GroupView &x) {
            return x.groupId == e.groupId && !x.forming && x.weight == e.weight && x.digest == e.digest;
        });
        if (v == views.end()) {
            if (why) {
                const auto seen = std::find_if(views.begin(), views.end(), [&](const GroupView &x) { return x.groupId == e.groupId; });
                *why = "the best of " + seal.peerId.substr(0, 8) + "'s seal names group " + e.groupId + " ("
                       + std::to_string(e.weight) + " samples, " + e.digest.substr(0, 8) + "), which this peer's records "
                       + (seen == views.end() ? std::string("do not show")
                          : seen->forming ? std::string("show still forming")
                                          : "show as " + std::to_string(seen->weight) + " samples, " + seen->digest.substr(0, 8));
            }
            return std::nullopt;
        }
        chosen.push_back(*v);
    }
    std::sort(chosen.begin(), chosen.end(), [](const GroupView &a, const GroupView &b) { return a.groupId < b.groupId; });
    return chosen;
}

std::optional<SealChoice> bestSeal(const std::vector<GroupRecord> &records, const std::vector<GroupView> &views,
                                   const GroupRecord &mine, bool onlyTheBest, std::string *why)
{
    const auto seals = rankedSeals(records, mine.epoch);
    for (const auto *seal : seals) {
        if (auto chosen = sealedViews(*seal, views, mine, seal == seals.front() ? why : nullptr))
            return SealChoice{*seal, std::move(*chosen)};
        if (onlyTheBest)
            break;
    }
    return std::nullopt;
}

namespace {

void sleepFor(double seconds, const std::atomic<bool> &stop)
{
    const double until = unixNow() + seconds;
    while (!stop.load() && unixNow() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

} // namespace

// The epoch's groups as the records show them once the groups seen hold every peer expected at
// this epoch and none is forming, a seal it can check is seen, or the wait (GroupMerge.h,
// MergeOptions) ends.
GroupMerger::Awaited GroupMerger::awaitGroups(const std::string &key, const GroupRecord &mine, const GroupInfo &group,
                                              const std::function<std::size_t()> &expectedPeers, double roundSeconds,
                                              double formingSeconds, const std::atomic<bool> &stop) const
{
    const double started = unixNow();
    const double fullWait = std::max(m_options.minWait, m_options.roundShare * roundSeconds);
    const double formingWait = std::max({fullWait, m_options.formingWait, m_options.roundShare * formingSeconds});
    Awaited a;
    while (!stop.load()) {
        const std::size_t expected = expectedPeers ? expectedPeers() : 0;
        const auto records = absorb(a.book, readRecords(key), group.epoch);
        a.views = groupViews(records, group.epoch, m_options.maxGroupWeight);
        a.sealed = bestSeal(records, a.views, mine, false, nullptr).has_value();
        std::size_t seen = group.members.size();
        bool forming = false, ownConfirmed = group.groupId.empty();
        for (const auto &v : a.views)
            if (v.groupId != group.groupId) {
                seen += v.members;
                forming = forming || v.forming;
            } else {
                ownConfirmed = !v.forming; // two of its members' records agree: others can check it
            }
        // A member that sees fewer peers in groups than it expects at this epoch waits as in a
        // larger swarm, and seals: the peers it misses may be in a group that formed later (split
        // matchmaking views), whose members then find the seal instead of merging a set of their own.
        a.others = seen > group.members.size() || expected > m_options.targetGroupSize
                   || (!group.groupId.empty() && expected > seen);
        const double wait = forming ? formingWait : a.others ? fullWait : m_options.splitWait;
        if (a.sealed || (seen >= expected && !forming && (ownConfirmed || !a.others)) || unixNow() >= started + wait)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return a;
}

// The groups this peer merges: those it awaited where no seal is needed (one group seen, as
// many peers as one group holds), else those of the best seal it can check (GroupMerge.h),
// which a peer whose reads show none asks members for (averaging/SealRelay.h).
std::vector<GroupView> GroupMerger::agreeOnGroups(const std::string &key, GroupRecord mine, Awaited awaited,
                                                  const std::atomic<bool> &stop, MergeResult &result)
{
    if (!awaited.others && !awaited.sealed)
        return std::move(awaited.views);
    if (!awaited.sealed && !mine.groupId.empty()) // a peer without a group only takes seals
        publishSeal(key, mine, awaited);
    sleepFor(m_options.sealSettle, stop);
    std::string why = "none seen";
    auto chosen = pickSeal(key, mine, awaited.book, unixNow() + m_options.fetchTimeout, stop, &why);
    if (!chosen && !stop.load())
        chosen = askMembers(key, mine, awaited.book, stop, &why);
    if (!chosen) {
        result.note += "; no seal of this epoch could be checked (" + why + "): merged the groups this peer saw";
        return std::move(awaited.views);
    }
    result.sealed = true;
    for (const auto &v : awaited.views) {
        const auto in = [&](const GroupView &c) { return c.groupId == v.groupId; };
        if (std::none_of(chosen->views.begin(), chosen->views.end(), in))
            result.note += "; group " + v.groupId + " not merged: "
                           + (v.forming ? "its round did not end in time" : "the epoch's seal leaves it out");
    }
    if (m_service) { // what a peer whose reads missed the seal may ask this one for
        awaited.book.try_emplace(mine.peerId, mine);
        m_service->addSealRelay(mine.epoch, sealRelayValues(chosen->seal, awaited.book));
    }
    return std::move(chosen->views);
}

// Seals the groups of `awaited` that two members' records confirm, its own included: what every
// reader can check (a group whose partner's record never arrived is left out, also by its members).
void GroupMerger::publishSeal(const std::string &key, GroupRecord &mine, Awaited &awaited)
{
    for (const auto &v : awaited.views)
        if (!v.forming && mine.seal.size() < MaxSealGroups)
            mine.seal.push_back({v.groupId, v.weight, v.digest});
    if (m_announcing.valid())
        m_announcing.wait(); // the plain record must not land after (and over) the seal
    if (mine.seal.empty())
        return;
    const auto payload = encodeGroupRecord(mine);
    const double now = unixNow();
    mine.signedValue = m_dht.encodeRecord(key, payload, 0, now, now + RecordSeconds);
    publishRecord(key, payload);
    awaited.book[mine.peerId] = mine; // its own seal counts even where the DHT answers an older copy
}

// Reads `key` until the best seal checks, or until `deadline`, then the best that checks.
std::optional<SealChoice> GroupMerger::pickSeal(const std::string &key, const GroupRecord &mine, RecordBook &book,
                                                double deadline, const std::atomic<bool> &stop, std::string *why) const
{
    while (!stop.load()) {
        const auto records = absorb(book, readRecords(key), mine.epoch);
        const auto views = groupViews(records, mine.epoch, m_options.maxGroupWeight);
        const bool last = unixNow() >= deadline;
        if (auto chosen = bestSeal(records, views, mine, !last, why))
            return chosen;
        if (last)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return std::nullopt;
}

// Asks up to MaxSealAsks members that served a complete round (one per group first, from a group
// this peer's id picks) for the seal they merged, until the records they relay confirm one.
std::optional<SealChoice> GroupMerger::askMembers(const std::string &key, const GroupRecord &mine, RecordBook &book,
                                                  const std::atomic<bool> &stop, std::string *why) const
{
    std::map<std::string, std::vector<GroupRecord>> byGroup;
    for (const auto &[peer, r] : book)
        if (peer != m_self.peerId && r.epoch == mine.epoch && !r.digest.empty() && !r.serviceEndpoint.empty())
            byGroup[r.groupId].push_back(r);
    std::vector<GroupRecord> asked;
    const std::size_t first = std::hash<std::string>{}(m_self.peerId);
    for (std::size_t round = 0; asked.size() < MaxSealAsks && round < MaxSealAsks; ++round)
        for (std::size_t g = 0; g < byGroup.size() && asked.size() < MaxSealAsks; ++g) {
            const auto &members = std::next(byGroup.begin(), static_cast<long>((first + g) % byGroup.size()))->second;
            if (round < members.size())
                asked.push_back(members[(first + round) % members.size()]);
        }
    std::string answers;
    for (const auto &member : asked) {
        if (stop.load())
            break;
        std::string whyNot;
        const auto relayed = askForSeal(member, m_self.runId, mine.epoch, key, m_options.fetchTimeout / 2.0, 3.0, stop,
                                        m_security, &whyNot);
        const auto records = absorb(book, admitted(relayed), mine.epoch);
        if (auto chosen = bestSeal(records, groupViews(records, mine.epoch, m_options.maxGroupWeight), mine, false, why))
            return chosen;
        answers += (answers.empty() ? "" : ", ") + member.peerId.substr(0, 8) + ": "
                   + (whyNot.empty() ? "relayed no seal this peer can check" : whyNot);
    }
    if (!asked.empty())
        *why += "; asked " + answers;
    return std::nullopt;
}

} // namespace dedloc
