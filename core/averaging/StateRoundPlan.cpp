#include "averaging/StateRoundPlan.h"

#include <algorithm>

namespace dedloc {

StateRoundPlan planStateRound(const std::vector<GroupMember> &members, std::size_t me, bool iTrain)
{
    StateRoundPlan plan;
    // The fastest trainer that did not ask for repair, else the fastest trainer; ties to the
    // lower index.
    std::optional<std::size_t> fresh, any;
    for (std::size_t i = 0; i < members.size(); ++i) {
        if (members[i].weight <= 0.0)
            continue;
        if (!any || members[i].bandwidth > members[*any].bandwidth)
            any = i;
        if (!members[i].repair && (!fresh || members[i].bandwidth > members[*fresh].bandwidth))
            fresh = i;
    }
    plan.freshTrainer = fresh.has_value();
    const bool repairing = std::any_of(members.begin(), members.end(), [](const GroupMember &m) { return m.repair; });
    if (repairing)
        plan.source = fresh ? fresh : any;
    if (!iTrain || me >= members.size())
        return plan;
    plan.myWeight = !plan.source || *plan.source == me ? 1.0 : 0.0;
    return plan;
}

} // namespace dedloc
