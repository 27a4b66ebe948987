#include "averaging/GroupMerge.h"

#include "averaging/BanList.h"
#include "averaging/PeerService.h"
#include "averaging/RoundEvidence.h"
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
    std::map<std::string, std::size_t> ended;
    for (const auto &r : records) {
        if (r.epoch != epoch)
            continue;
        known[r.groupId].push_back(&r);
        ended[r.groupId] += r.ended ? 1 : 0;
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
        // Members whose round ended without an average leave too few to agree on one, and none
        // claims one: nothing of this group will come (nothing to wait for, nothing to merge).
        if (v.forming && ended[groupId] >= 1 && members < ended[groupId] + 2 && claims.count(groupId) == 0)
            continue;
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
    for (auto &f : m_checking)
        f.wait();
}

std::vector<GroupRecord> GroupMerger::readRecords(const std::string &key) const
{
    return admitted(m_dht.fetch(key, 1.0));
}

bool GroupMerger::publishedChecks(const GroupInfo &group) const
{
    std::lock_guard lock(m_checkedMutex);
    return std::find(m_checked.begin(), m_checked.end(), group.groupId) != m_checked.end();
}

void GroupMerger::publishChecks(const GroupInfo &group, const std::string &digest, const RoundEvidence &evidence,
                                bool partial) const
{
    publishCheckRecord({m_self.peerId, group.epoch, group.groupId, group.members.size(), digest,
                        evidence.sketch(digest), partial});
}

void GroupMerger::publishCheckRecord(CheckRecord mine) const
{
    {
        std::lock_guard lock(m_checkedMutex);
        if (std::find(m_checked.begin(), m_checked.end(), mine.groupId) == m_checked.end())
            m_checked.push_back(mine.groupId);
        while (m_checked.size() > 64)
            m_checked.pop_front();
    }
    if (!m_options.publishChecks)
        return;
    if (mine.partial)
        mine.sketches.own.clear();
    publishRecord(checksKey(m_self.runId, mine.epoch, mine.groupId), encodeCheckRecord(mine));
}

std::vector<CheckRecord> GroupMerger::checkRecords(const GroupInfo &group) const
{
    std::vector<CheckRecord> records;
    const double now = unixNow();
    for (const auto &record : m_dht.fetch(checksKey(m_self.runId, group.epoch, group.groupId), 1.0)) {
        if (!admits(record, now))
            continue;
        try {
            auto r = parseCheckRecord(record.peerId, record.payload);
            if (r.epoch == group.epoch && r.groupId == group.groupId)
                records.push_back(std::move(r));
        } catch (const std::exception &e) {
            log::warning("check", "ignored a check record of " + record.peerId.substr(0, 8) + ": " + e.what());
        }
    }
    return records;
}

bool GroupMerger::admits(const SignedRecord &record, double now) const
{
    if (m_bans && m_bans->isBanned(record.peerId, now))
        return false;
    return !m_security || m_security->admission(record.publicKey).empty(); // closed run: admitted peers only
}

// The group records of `signed_` from peers neither banned nor (closed runs) refused admission.
std::vector<GroupRecord> GroupMerger::admitted(const std::vector<SignedRecord> &signed_) const
{
    std::vector<GroupRecord> records;
    const double now = unixNow();
    for (const auto &record : signed_) {
        if (!admits(record, now))
            continue;
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
    *why = "stopped";
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
        if (m_dht.publish(key, payload, RecordSeconds, 1.0))
            return;
}

void GroupMerger::announce(const GroupInfo &group)
{
    if (m_announcing.valid())
        m_announcing.wait();
    const GroupRecord r{m_self.peerId, {}, group.epoch, group.groupId, 0, group.members.size(), {}, {}, {}, {}};
    m_announcing = std::async(std::launch::async, [this, r] {
        publishRecord(groupsKey(m_self.runId, r.epoch), encodeGroupRecord(r));
    });
}

bool GroupMerger::groupsStillRunning(long epoch)
{
    std::lock_guard lock(m_runningMutex);
    const double now = unixNow();
    if (epoch != m_runningEpoch || now - m_runningReadAt >= 0.5) {
        const auto views = groupViews(readRecords(groupsKey(m_self.runId, epoch)), epoch,
                                      m_options.maxGroupWeight);
        m_running = std::any_of(views.begin(), views.end(), [](const GroupView &v) { return v.forming; });
        m_runningEpoch = epoch;
        m_runningReadAt = now;
    }
    return m_running;
}

MergeResult GroupMerger::merge(const GroupInfo &group, const std::shared_ptr<const AveragedUpdate> &own,
                               const std::function<std::size_t()> &expectedPeers, double roundSeconds,
                               const std::atomic<bool> &stop, const std::shared_ptr<const RoundEvidence> &evidence)
{
    MergeResult result;
    const long epoch = own->epoch;
    const auto key = groupsKey(m_self.runId, epoch);
    if (m_announcing.valid())
        m_announcing.wait(); // its announcement must not land after (and over) the record below
    const auto digest = updateDigest(*own);
    if (m_service)
        m_service->addGroupUpdate(group.groupId, own);
    GroupRecord mine{m_self.peerId, {}, epoch, group.groupId, own->batchSamples, group.members.size(), digest,
                     m_service ? m_service->endpoint() : std::string(), {}, {}, {}};
    const auto payload = encodeGroupRecord(mine);
    const double now = unixNow();
    mine.signedValue = m_dht.encodeRecord(key, payload, 0, now, now + RecordSeconds); // relayed with a seal
    // Published beside the wait (it does not need its own record): the step is not delayed by a
    // DHT put, also where one group holds the swarm. The next announcement waits for it.
    m_announcing = std::async(std::launch::async, [this, key, payload] { publishRecord(key, payload); });
    if (evidence) { // the auditors read them seconds later (ResultAuditor.h AuditDelay)
        // Publications still in flight are not waited for (a put to a stalled node takes its three
        // tries): the step goes on; the destructor waits for them.
        std::erase_if(m_checking, [](const std::future<void> &f) {
            return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
        });
        {
            std::lock_guard lock(m_checkedMutex); // published from now on, for ResultAuditor::publishView
            m_checked.push_back(group.groupId);
        }
        // The evidence (the round's payloads, a few vectors' worth) is let go once sketched.
        m_checking.push_back(std::async(std::launch::async, [this, group, digest, kept = evidence]() mutable {
            try {
                CheckRecord mine{m_self.peerId, group.epoch, group.groupId, group.members.size(), digest,
                                 kept->sketch(digest)};
                kept.reset();
                publishCheckRecord(std::move(mine));
            } catch (const std::exception &e) {
                log::warning("check", "round " + group.groupId + ": its check record not published: " + e.what());
            }
        }));
    }
    auto views = agreeOnGroups(
        key, mine, awaitGroups(key, mine, group, expectedPeers, roundSeconds, roundSeconds, stop), stop, result);
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
                               const std::atomic<bool> &stop, const GroupInfo &round, double roundSeconds)
{
    MergeResult result;
    const auto key = groupsKey(m_self.runId, epoch);
    const GroupInfo none{{}, epoch, {}};
    const GroupInfo &waitAs = round.groupId.empty() ? none : round;
    const GroupRecord mine{m_self.peerId, {}, epoch, {}, 0, 0, {}, {}, {}, false, {}};
    if (!round.groupId.empty() && round.epoch == epoch) { // its round's end, over its announcement
        if (m_announcing.valid())
            m_announcing.wait();
        GroupRecord end{m_self.peerId, {}, epoch, round.groupId, 0, round.members.size(), {}, {}, {}, true, {}};
        m_announcing = std::async(std::launch::async, [this, key, payload = encodeGroupRecord(end)] {
            publishRecord(key, payload);
        });
    }
    auto views =
        agreeOnGroups(key, mine, awaitGroups(key, mine, waitAs, expectedPeers, 0.0, roundSeconds, stop), stop, result);
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
