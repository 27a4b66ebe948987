#include "averaging/ResultAudit.h"

#include <algorithm>
#include <map>
#include <optional>

namespace dedloc {

namespace {

using MemberRecords = std::vector<std::optional<CheckRecord>>;

// Per member index, its record of this round.
MemberRecords recordsOfMembers(const GroupInfo &group, const std::vector<CheckRecord> &records)
{
    std::map<std::string, std::size_t> index;
    for (std::size_t i = 0; i < group.members.size(); ++i)
        index[group.members[i].peerId] = i;
    MemberRecords byMember(group.members.size());
    for (const auto &r : records) {
        const auto it = index.find(r.peerId);
        if (it != index.end() && r.groupId == group.groupId && r.epoch == group.epoch
            && r.members == group.members.size())
            byMember[it->second] = r; // one record per signer and key (DhtNode.h)
    }
    return byMember;
}

// The digest more than half of the records read claim, or "" when none does.
std::string majorityDigest(const MemberRecords &byMember)
{
    std::map<std::string, std::size_t> votes;
    std::size_t read = 0;
    for (const auto &r : byMember)
        if (r) {
            ++votes[r->digest];
            ++read;
        }
    for (const auto &[digest, n] : votes)
        if (2 * n > read)
            return digest;
    return {};
}

// Why reducer j's view names members it cannot have counted, or "": an index outside the group,
// or a member that sent no values (weight 0 in the BEGIN), whose record could not dispute it.
std::string namesWhoCannotCount(const GroupInfo &group, const RoundSketches &sketches)
{
    for (const auto &entry : sketches.view)
        if (entry.member >= group.members.size() || group.members[entry.member].weight <= 0.0)
            return "its view counts member " + std::to_string(entry.member) + ", which sent no values";
    return {};
}

AuditVerdict judge(const GroupInfo &group, const MemberRecords &byMember, const std::string &majority,
                   std::size_t j, double radius)
{
    const auto &reducer = *byMember[j];
    AuditVerdict verdict{j, {}};
    if (reducer.digest != majority) {
        verdict.check.outcome = CheckOutcome::Fails;
        verdict.check.reason = "its record claims another average than its group's";
        return verdict;
    }
    if (auto why = namesWhoCannotCount(group, reducer.sketches); !why.empty()) {
        verdict.check.outcome = CheckOutcome::Fails;
        verdict.check.reason = std::move(why);
        return verdict;
    }
    CheckScope scope;
    scope.radius = radius;
    scope.reducerSent = !reducer.sketches.own.empty();
    scope.senders = static_cast<std::size_t>(std::count_if(group.members.begin(), group.members.end(),
                                                           [](const GroupMember &m) { return m.weight > 0.0; }));
    std::vector<MemberSketch> own;
    for (std::size_t i = 0; i < byMember.size(); ++i) {
        const bool reports = byMember[i] && byMember[i]->digest == majority && !byMember[i]->partial;
        if (group.members[i].weight > 0.0 && !reports)
            scope.allReported = false;
        if (i == j || !reports)
            continue;
        // A member whose record sketches nothing of this shard says it was not counted in it.
        MemberSketch mine{i, {}};
        mine.sketch.shard = static_cast<std::uint32_t>(j);
        for (const auto &s : byMember[i]->sketches.own)
            if (s.shard == j)
                mine.sketch = s;
        own.push_back(mine);
    }
    verdict.check = checkShard(reducer.sketches.view, own, j, scope);
    return verdict;
}

// Whether more than half of the senders other than j have records claiming `majority` whose own
// sketch of j's shard has weight: j reduced a shard, and its view would judge it.
bool countedMostSenders(const GroupInfo &group, const MemberRecords &byMember, const std::string &majority,
                        std::size_t j)
{
    std::size_t senders = 0, counted = 0;
    for (std::size_t i = 0; i < byMember.size(); ++i) {
        if (i == j || group.members[i].weight <= 0.0)
            continue;
        ++senders;
        const auto &r = byMember[i];
        if (r && r->digest == majority && !r->partial
            && std::any_of(r->sketches.own.begin(), r->sketches.own.end(),
                           [&](const ShardSketch &s) { return s.shard == j && s.weight > 0.0; }))
            ++counted;
    }
    return 2 * counted > senders;
}

} // namespace

std::string groupAverageDigest(const GroupInfo &group, const std::vector<CheckRecord> &records)
{
    return majorityDigest(recordsOfMembers(group, records));
}

std::vector<AuditVerdict> auditGroup(const GroupInfo &group, const std::vector<CheckRecord> &records, double radius)
{
    const auto byMember = recordsOfMembers(group, records);
    const auto majority = majorityDigest(byMember);
    std::vector<AuditVerdict> verdicts;
    if (majority.empty())
        return verdicts; // no average most of the group agrees on: nothing to compare against
    for (std::size_t j = 0; j < byMember.size(); ++j) {
        if (!byMember[j]) {
            if (countedMostSenders(group, byMember, majority, j))
                verdicts.push_back({j, {CheckOutcome::Undecided, {}, 0.0, 0.0, "it published no check record"}, true});
            continue;
        }
        const bool sketched = !byMember[j]->sketches.view.empty()
                              || std::any_of(byMember.begin(), byMember.end(), [&](const auto &r) {
                                     return r && std::any_of(r->sketches.own.begin(), r->sketches.own.end(),
                                                             [&](const ShardSketch &s) { return s.shard == j; });
                                 });
        if (sketched)
            verdicts.push_back(judge(group, byMember, majority, j, radius));
    }
    return verdicts;
}

} // namespace dedloc
