#pragma once
// Agreeing on the set of groups one epoch merges (docs/PROTOCOL.md "Merging groups", step 5;
// averaging/GroupMerge.h "Sealing the merge"): the record book a merge keeps across its DHT
// reads, the order of seals, and which groups a seal names as a reader can check them. The
// GroupMerger's waits that use them (awaitGroups, agreeOnGroups) are defined in GroupSeal.cpp.
// Pure functions; thread-safe.
#include "averaging/GroupMerge.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dedloc {

// One epoch's group records by peer id: the most informed record of each member seen so far.
using RecordBook = std::map<std::string, GroupRecord>;

// A member's records of one epoch only gain information (announcement, then its group's
// average or the end of a round without one, then maybe a seal): 0, 1, 2.
[[nodiscard]] int informed(const GroupRecord &record);
// Adds the records of `epoch` in `records` to `book` (a key serves a ring of epochs: others are
// skipped), each replacing the member's entry unless that one is more informed (a DHT read that
// answers an older copy, or times out on part of the nodes, takes back nothing an earlier read
// showed), and returns every record of the book.
std::vector<GroupRecord> absorb(RecordBook &book, std::vector<GroupRecord> records, long epoch);

// The epoch's seals in `records`, best first: the largest sealed weight (the sum of its
// entries' weights), then the most groups, then the smallest sealer id.
[[nodiscard]] std::vector<const GroupRecord *> rankedSeals(const std::vector<GroupRecord> &records, long epoch);

// The views of the groups `seal` names, in group id order, when each is complete in `views`
// with the weight and digest sealed (or is `mine`'s own group with its own average); nothing
// otherwise, with the first group that failed in `*why`.
[[nodiscard]] std::optional<std::vector<GroupView>> sealedViews(const GroupRecord &seal,
                                                                const std::vector<GroupView> &views,
                                                                const GroupRecord &mine, std::string *why = nullptr);

struct SealChoice {
    GroupRecord seal;
    std::vector<GroupView> views; // sealedViews() of it
};
// The best seal of `records` that `views` confirm. `onlyTheBest`: nothing unless it is the best
// seal of all (its records may still be on their way); otherwise the best one that checks.
[[nodiscard]] std::optional<SealChoice> bestSeal(const std::vector<GroupRecord> &records,
                                                 const std::vector<GroupView> &views, const GroupRecord &mine,
                                                 bool onlyTheBest, std::string *why);

} // namespace dedloc
