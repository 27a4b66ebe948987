#include "averaging/GroupMerge.h"

#include "averaging/BanList.h"
#include "averaging/PeerService.h"
#include "averaging/UpdateArchive.h"
#include "averaging/UpdateDownload.h"
#include "net/DataPlaneSecurity.h"
#include "util/Clock.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>
#include <tuple>

namespace dedloc {

std::string updateDigest(const AveragedUpdate &update)
{
    std::string bytes = updateHeaderToJson(update).dump();
    bytes.append(reinterpret_cast<const char *>(update.bytes.data()), update.bytes.size());
    return sha256Hex(bytes.data(), bytes.size());
}

std::vector<GroupView> groupViews(const std::vector<GroupRecord> &records, long epoch, double maxGroupWeight)
{
    // group id -> (weight, members, digest) -> records claiming it; and every record of the group
    std::map<std::string, std::map<std::tuple<long, std::size_t, std::string>, std::vector<const GroupRecord *>>> claims;
    std::map<std::string, std::vector<const GroupRecord *>> known;
    for (const auto &r : records) {
        if (r.epoch != epoch)
            continue;
        known[r.groupId].push_back(&r);
        if (!r.digest.empty())
            claims[r.groupId][{r.weight, r.members, r.digest}].push_back(&r);
    }
    std::vector<GroupView> views;
    for (const auto &[groupId, all] : known) {
        if (all.size() < 2)
            continue; // a group has two members at least: one record is nobody's word but its own
        std::size_t members = 0;
        for (const auto *r : all)
            members = std::max(members, r->members);
        GroupView v{groupId, true, 0, members, {}, 0, {}};
        if (const auto it = claims.find(groupId); it != claims.end()) {
            const auto *best = &*it->second.begin(); // map order: ties go to the first claim
            for (const auto &c : it->second)
                if (c.second.size() > best->second.size())
                    best = &c;
            const auto &[weight, claimed, digest] = best->first;
            if (best->second.size() >= 2) {
                if (static_cast<double>(weight) > maxGroupWeight * static_cast<double>(claimed))
                    continue; // heavier than its members can be
                v = {groupId, false, weight, claimed, digest, best->second.size(), {}};
                for (const auto *r : best->second)
                    if (!r->serviceEndpoint.empty())
                        v.servers.push_back(*r);
            }
        }
        views.push_back(std::move(v));
    }
    return views; // std::map iterates group ids in order
}

std::vector<float> mergeAverages(const std::vector<std::vector<float>> &averages, const std::vector<long> &weights)
{
    if (averages.empty() || averages.size() != weights.size())
        throw Error("mergeAverages: " + std::to_string(averages.size()) + " averages, " + std::to_string(weights.size())
                    + " weights");
    double total = 0.0;
    for (const long w : weights)
        total += static_cast<double>(w);
    std::vector<double> sum(averages.front().size(), 0.0);
    for (std::size_t g = 0; g < averages.size(); ++g) {
        if (averages[g].size() != sum.size())
            throw Error("mergeAverages: averages of different sizes");
        const double share = total > 0.0 ? static_cast<double>(weights[g]) / total : 1.0 / double(averages.size());
        for (std::size_t i = 0; i < sum.size(); ++i)
            sum[i] += share * static_cast<double>(averages[g][i]);
    }
    return {sum.begin(), sum.end()};
}

GroupMerger::GroupMerger(DhtNode &dht, PeerService *service, MergeSelf self, MergeOptions options,
                         std::shared_ptr<const DataPlaneSecurity> security, std::shared_ptr<const BanList> bans)
    : m_dht(dht), m_service(service), m_self(std::move(self)), m_options(options), m_security(std::move(security)),
      m_bans(std::move(bans))
{
}

GroupMerger::~GroupMerger()
{
    if (m_announcing.valid())
        m_announcing.wait();
}

std::vector<GroupRecord> GroupMerger::readRecords(const std::string &key) const
{
    std::vector<GroupRecord> records;
    const double now = unixNow();
    for (const auto &record : m_dht.fetch(key, 1.0)) {
        if (m_bans && m_bans->isBanned(record.peerId, now))
            continue;
        if (m_security && !m_security->admission(record.publicKey).empty())
            continue; // closed run: only admitted peers' groups count
        try {
            records.push_back(parseGroupRecord(record));
        } catch (const std::exception &e) {
            log::warning("merge", "ignored a group record of " + record.peerId.substr(0, 8) + ": " + e.what());
        }
    }
    return records;
}

std::optional<AveragedUpdate> GroupMerger::fetchAverage(const GroupView &view, long epoch, std::uint64_t elements,
                                                        const std::atomic<bool> &stop, std::string *why) const
{
    if (view.servers.empty()) {
        *why = "no member serves it";
        return std::nullopt;
    }
    // Start at a member this peer's id picks: the group's downloads spread over its members.
    const std::size_t first = std::hash<std::string>{}(m_self.peerId) % view.servers.size();
    for (std::size_t k = 0; k < view.servers.size() && !stop.load(); ++k) {
        const auto &server = view.servers[(first + k) % view.servers.size()];
        const DonorAdvert donor{server.peerId, server.serviceEndpoint, epoch, server.publicKey, false};
        UpdateFetcher fetcher(donor, m_self.runId, elements, m_options.fetchTimeout, stop, m_security);
        auto u = fetcher.fetch(epoch, view.groupId);
        if (u && updateDigest(*u) == view.digest && u->batchSamples == view.weight)
            return u;
        *why = u ? "member " + server.peerId.substr(0, 8) + " served another average than its group claims"
                 : "member " + server.peerId.substr(0, 8) + ": " + (fetcher.why().empty() ? "no answer" : fetcher.why());
    }
    return std::nullopt;
}

void GroupMerger::publishRecord(const std::string &key, const std::string &payload) const
{
    // A put the DHT did not confirm (a loaded node answers late) is tried again: a record that
    // never lands leaves its group unconfirmed for everyone.
    for (int attempt = 0; attempt < 3; ++attempt)
        if (m_dht.publish(key, payload, 120.0, 1.0))
            return;
}

void GroupMerger::announce(const GroupInfo &group)
{
    if (m_announcing.valid())
        m_announcing.wait();
    const GroupRecord r{m_self.peerId, {}, group.epoch, group.groupId, 0, group.members.size(), {}, {}, {}};
    m_announcing = std::async(std::launch::async, [this, r] {
        publishRecord(runKey(m_self.runId, "groups/" + std::to_string(r.epoch)), encodeGroupRecord(r));
    });
}

bool GroupMerger::groupsStillRunning(long epoch)
{
    std::lock_guard lock(m_runningMutex);
    const double now = unixNow();
    if (epoch != m_runningEpoch || now - m_runningReadAt >= 0.5) {
        const auto views = groupViews(readRecords(runKey(m_self.runId, "groups/" + std::to_string(epoch))), epoch,
                                      m_options.maxGroupWeight);
        m_running = std::any_of(views.begin(), views.end(), [](const GroupView &v) { return v.forming; });
        m_runningEpoch = epoch;
        m_runningReadAt = now;
    }
    return m_running;
}

namespace {

// A member's records of one epoch only gain information (announcement, then its group's
// average, then maybe a seal), so the most informed one seen so far is kept: a DHT read that
// answers an older copy, or times out on part of the nodes, does not take back what an earlier
// read showed.
int informed(const GroupRecord &r) { return !r.seal.empty() ? 2 : r.digest.empty() ? 0 : 1; }

std::vector<GroupRecord> absorb(std::map<std::string, GroupRecord> &book, std::vector<GroupRecord> records)
{
    for (auto &r : records) {
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

void sleepFor(double seconds, const std::atomic<bool> &stop)
{
    const double until = unixNow() + seconds;
    while (!stop.load() && unixNow() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

// The epoch's seals, best first: the largest sealed weight, then the most groups, then the
// smallest sealer id.
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

// The views of the groups `seal` names, in group id order, when each is complete in `views`
// with the weight and digest sealed (this peer's own group also when it holds that average).
std::optional<std::vector<GroupView>> sealedViews(const GroupRecord &seal, const std::vector<GroupView> &views,
                                                  const GroupRecord &mine, std::string *why = nullptr)
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

} // namespace

// The epoch's groups as the records show them once the groups seen hold every peer expected at
// this epoch and none is forming, a seal it can check is seen, or the wait (GroupMerge.h,
// MergeOptions) ends.
GroupMerger::Awaited GroupMerger::awaitGroups(const std::string &key, const GroupRecord &mine, const GroupInfo &group,
                                              const std::function<std::size_t()> &expectedPeers, double roundSeconds,
                                              const std::atomic<bool> &stop) const
{
    const double started = unixNow();
    const double fullWait = std::max(m_options.minWait, m_options.roundShare * roundSeconds);
    Awaited a;
    while (!stop.load()) {
        const std::size_t expected = expectedPeers ? expectedPeers() : 0;
        const auto records = absorb(a.book, readRecords(key));
        a.views = groupViews(records, group.epoch, m_options.maxGroupWeight);
        const auto seals = rankedSeals(records, group.epoch);
        a.sealed = std::any_of(seals.begin(), seals.end(),
                               [&](const GroupRecord *r) { return sealedViews(*r, a.views, mine).has_value(); });
        std::size_t seen = group.members.size();
        bool forming = false, ownConfirmed = group.groupId.empty();
        for (const auto &v : a.views)
            if (v.groupId != group.groupId) {
                seen += v.members;
                forming = forming || v.forming;
            } else {
                ownConfirmed = !v.forming; // two of its members' records agree: others can check it
            }
        a.others = seen > group.members.size() || expected > m_options.targetGroupSize;
        const double wait = forming ? std::max(fullWait, m_options.formingWait) : a.others ? fullWait : m_options.splitWait;
        if (a.sealed || (seen >= expected && !forming && (ownConfirmed || !a.others)) || unixNow() >= started + wait)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return a;
}

// The groups this peer merges: those it awaited where no seal is needed (one group seen, as
// many peers as one group holds), else those of the best seal it can check (GroupMerge.h).
std::vector<GroupView> GroupMerger::agreeOnGroups(const std::string &key, GroupRecord mine, Awaited awaited,
                                                  const std::atomic<bool> &stop, MergeResult &result)
{
    if (!awaited.others && !awaited.sealed)
        return std::move(awaited.views);
    if (!awaited.sealed && !mine.groupId.empty()) { // a peer without a group only takes seals
        // Only groups that two members' records confirm, its own included: what every reader
        // can check (a group whose partner's record never arrived is left out, also by its members).
        for (const auto &v : awaited.views)
            if (!v.forming && mine.seal.size() < MaxSealGroups)
                mine.seal.push_back({v.groupId, v.weight, v.digest});
        if (m_announcing.valid())
            m_announcing.wait(); // the plain record must not land after (and over) the seal
        if (!mine.seal.empty()) {
            publishRecord(key, encodeGroupRecord(mine));
            awaited.book[mine.peerId] = mine; // its own seal counts even where the DHT answers an older copy
        }
    }
    sleepFor(m_options.sealSettle, stop);
    const double deadline = unixNow() + m_options.fetchTimeout;
    std::string why = "none seen";
    while (!stop.load()) {
        const auto records = absorb(awaited.book, readRecords(key));
        const auto views = groupViews(records, mine.epoch, m_options.maxGroupWeight);
        const bool last = unixNow() >= deadline;
        const auto seals = rankedSeals(records, mine.epoch);
        for (const auto *seal : seals) {
            if (auto chosen = sealedViews(*seal, views, mine, seal == seals.front() ? &why : nullptr)) {
                result.sealed = true;
                for (const auto &v : awaited.views) {
                    const auto in = [&](const GroupView &c) { return c.groupId == v.groupId; };
                    if (std::none_of(chosen->begin(), chosen->end(), in))
                        result.note += "; group " + v.groupId + " not merged: "
                                       + (v.forming ? "its round did not end in time" : "the epoch's seal leaves it out");
                }
                return std::move(*chosen);
            }
            if (!last)
                break; // the best seal's records may still be on their way
        }
        if (last)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    result.note += "; no seal of this epoch could be checked (" + why + "): merged the groups this peer saw";
    return std::move(awaited.views);
}

MergeResult GroupMerger::merge(const GroupInfo &group, const std::shared_ptr<const AveragedUpdate> &own,
                               const std::function<std::size_t()> &expectedPeers, double roundSeconds,
                               const std::atomic<bool> &stop)
{
    MergeResult result;
    const long epoch = own->epoch;
    const auto key = runKey(m_self.runId, "groups/" + std::to_string(epoch));
    if (m_announcing.valid())
        m_announcing.wait(); // its announcement must not land after (and over) the record below
    const auto digest = updateDigest(*own);
    if (m_service)
        m_service->addGroupUpdate(group.groupId, own);
    const GroupRecord mine{m_self.peerId, {}, epoch, group.groupId, own->batchSamples, group.members.size(), digest,
                           m_service ? m_service->endpoint() : std::string(), {}};
    // Published beside the wait (it does not need its own record): the step is not delayed by a
    // DHT put, also where one group holds the swarm. The next announcement waits for it.
    m_announcing = std::async(std::launch::async, [this, key, payload = encodeGroupRecord(mine)] {
        publishRecord(key, payload);
    });
    auto views = agreeOnGroups(key, mine, awaitGroups(key, mine, group, expectedPeers, roundSeconds, stop), stop, result);
    // Unsealed, this peer's own group is merged whatever the records say (its members may not
    // have published yet), at its place in the order of group ids.
    if (!result.sealed
        && std::none_of(views.begin(), views.end(), [&](const GroupView &v) { return v.groupId == group.groupId; })) {
        views.push_back({group.groupId, false, own->batchSamples, group.members.size(), digest, 1, {}});
        std::sort(views.begin(), views.end(), [](const GroupView &a, const GroupView &b) { return a.groupId < b.groupId; });
    }
    mergeViews(views, group, {own.get(), digest, epoch, own->elements}, stop, result);
    if (!result.note.empty())
        result.note.erase(0, 2);
    return result;
}

MergeResult GroupMerger::adopt(long epoch, std::uint64_t elements, const std::function<std::size_t()> &expectedPeers,
                               const std::atomic<bool> &stop)
{
    MergeResult result;
    const auto key = runKey(m_self.runId, "groups/" + std::to_string(epoch));
    const GroupInfo none{{}, epoch, {}};
    const GroupRecord mine{m_self.peerId, {}, epoch, {}, 0, 0, {}, {}, {}};
    auto views = agreeOnGroups(key, mine, awaitGroups(key, mine, none, expectedPeers, 0.0, stop), stop, result);
    mergeViews(views, none, {nullptr, {}, epoch, elements}, stop, result);
    if (!result.note.empty())
        result.note.erase(0, 2);
    return result;
}

// Fetches and merges `views` (GroupMerge.h) into `result`; this peer's own group from `own.update`.
void GroupMerger::mergeViews(const std::vector<GroupView> &views, const GroupInfo &group, const OwnAverage &own,
                             const std::atomic<bool> &stop, MergeResult &result) const
{
    std::vector<std::vector<float>> averages;
    std::vector<long> weights;
    result.ownMerged = false;
    result.groups = 0;
    for (const auto &v : views) {
        const bool mine = own.update && v.groupId == group.groupId;
        if (mine && (v.forming || v.digest == own.digest || !result.sealed)) {
            if (!v.forming && v.digest != own.digest)
                result.note += "; most records of this peer's own group claim another average";
            averages.push_back(decodeUpdate(*own.update));
            weights.push_back(own.update->batchSamples);
            result.weight += own.update->batchSamples;
            result.peers += group.members.size();
            result.ownMerged = true;
            ++result.groups;
            continue;
        }
        if (v.forming) {
            result.note += "; group " + v.groupId + " not merged: its round did not end in time";
            continue;
        }
        std::string why;
        auto u = fetchAverage(v, own.epoch, own.elements, stop, &why);
        std::vector<float> values;
        if (u) {
            try {
                values = decodeUpdate(*u);
            } catch (const std::exception &e) {
                why = e.what();
            }
        }
        if (values.empty()) {
            result.note += "; group " + v.groupId + " not merged: " + why;
            continue;
        }
        averages.push_back(std::move(values));
        weights.push_back(v.weight);
        result.weight += v.weight;
        result.peers += v.members;
        ++result.groups;
        result.ownMerged = result.ownMerged || mine;
    }
    if (result.groups > 1 || (result.groups == 1 && !result.ownMerged)) {
        result.average = mergeAverages(averages, weights);
        return;
    }
    result.average.clear();
    if (!own.update) { // a peer without a group: nothing to take
        result.note += "; no group of this epoch could be merged";
        result.groups = 0;
        result.weight = 0;
        result.peers = 0;
        return;
    }
    if (result.sealed && !result.ownMerged)
        result.note += "; none of the sealed groups could be fetched: this step is the group's own average";
    result.groups = 1;
    result.weight = own.update->batchSamples;
    result.peers = group.members.size();
    result.ownMerged = true;
}

} // namespace dedloc
