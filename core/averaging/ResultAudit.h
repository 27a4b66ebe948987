#pragma once
// Judging the reducers of this member's group after a round that checked results: every member
// published its sketches in a check record (SketchRecord.h), and each reducer's view is checked
// against the other members' own sketches of its shard (ResultCheck.h checkShard).
//
// Which records count: those of the group's members (by peer id) for this group, epoch and group
// size. The group's average is the digest more than half of those records claim (none: no
// verdicts); only records claiming it are compared (the signs come from that digest). A reducer
// whose record claims another one fails, and so does one whose view counts a member outside the
// group or one that sent no values (weight 0 in the BEGIN: no sketch of its own can dispute it).
// A member whose record sketches nothing of a shard is compared as "not counted there" (an entry
// of weight 0); a partial record (its member's round was incomplete) reports on no other
// reducer. A reducer without a record read is not judged, but where more than half of the
// other senders' records (claiming the average) sketch its shard with weight, it is named silent:
// it reduced a shard and its view is missing (it may have left, or be late: the caller decides,
// ResultAuditor.h). A lone dispute counts only when every sender's record was read.
//
// Threads: any; no state. Errors: none (records come parsed; anything missing leaves a reducer
// unjudged).
#include "averaging/ResultCheck.h"
#include "averaging/SketchRecord.h"
#include "averaging/SwarmMessages.h"

#include <string>
#include <vector>

namespace dedloc {

struct AuditVerdict {
    std::size_t reducer = 0;   // member index of the reducer judged
    ShardCheck check;          // its outcome; check.disputes are member indices
    bool silent = false;       // no record of it read while its shard counted most senders
                               // (check: Undecided)
};

// The digest more than half of `group`'s members' check records read claim (the group's
// average), or "".
[[nodiscard]] std::string groupAverageDigest(const GroupInfo &group, const std::vector<CheckRecord> &records);

// The verdicts on the reducers of `group` judged from `records` (any records read: others are
// skipped), in member order. `radius`: the manifest's CenteredClip radius.
[[nodiscard]] std::vector<AuditVerdict> auditGroup(const GroupInfo &group, const std::vector<CheckRecord> &records,
                                                   double radius);

} // namespace dedloc
