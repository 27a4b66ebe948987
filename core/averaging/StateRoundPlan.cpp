#include "averaging/StateRoundPlan.h"

#include <algorithm>

namespace dedloc {

StateRoundPlan planStateRound(const std::vector<GroupMember> &members, std::size_t me, bool iTrain)
{
    StateRoundPlan plan;
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < members.size(); ++i)
        if (members[i].weight > 0.0 && !members[i].repair && (!best || members[i].bandwidth > members[*best].bandwidth))
            best = i;
    plan.freshTrainer = best.has_value();
    const bool repairing = std::any_of(members.begin(), members.end(), [](const GroupMember &m) { return m.repair; });
    if (repairing && best)
        plan.source = best;
    if (!iTrain || me >= members.size())
        return plan;
    plan.myWeight = !plan.source || *plan.source == me ? 1.0 : 0.0;
    return plan;
}

} // namespace dedloc
