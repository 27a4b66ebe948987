#include "averaging/ResultAudit.h"

#include <map>
#include <optional>

namespace dedloc {

namespace {

// Per member index, its record of this round (the one with sketches when it published several).
std::vector<std::optional<GroupRecord>> recordsOfMembers(const GroupInfo &group, const std::vector<GroupRecord> &records)
{
    std::map<std::string, std::size_t> index;
    for (std::size_t i = 0; i < group.members.size(); ++i)
        index[group.members[i].peerId] = i;
    std::vector<std::optional<GroupRecord>> byMember(group.members.size());
    for (const auto &r : records) {
        const auto it = index.find(r.peerId);
        if (it == index.end() || r.groupId != group.groupId || r.epoch != group.epoch || r.digest.empty())
            continue;
        auto &slot = byMember[it->second];
        if (!slot || (slot->sketches.empty() && !r.sketches.empty()))
            slot = r;
    }
    return byMember;
}

} // namespace

std::vector<AuditVerdict> auditGroup(const GroupInfo &group, const std::vector<GroupRecord> &records, double radius,
                                     Compression codec)
{
    const auto byMember = recordsOfMembers(group, records);
    std::vector<AuditVerdict> verdicts;
    for (std::size_t j = 0; j < byMember.size(); ++j) {
        if (!byMember[j])
            continue;
        const auto &reducer = *byMember[j];
        std::vector<MemberSketch> own;
        for (std::size_t i = 0; i < byMember.size(); ++i) {
            if (i == j || !byMember[i] || byMember[i]->digest != reducer.digest)
                continue;
            for (const auto &s : byMember[i]->sketches.own)
                if (s.shard == j)
                    own.push_back({i, s});
        }
        if (reducer.sketches.view.empty() && own.empty())
            continue; // it reduced nothing that was checked
        verdicts.push_back({j, checkShard(reducer.sketches.view, own, j, radius, codec)});
    }
    return verdicts;
}

} // namespace dedloc
