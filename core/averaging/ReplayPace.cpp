#include "averaging/ReplayPace.h"

#include <cmath>
#include <cstdio>

namespace dedloc {

std::string replayFallsBehind(const ReplayPass &pass)
{
    if (pass.updates < MinUpdatesToJudge || pass.behindAfter < pass.behindBefore || pass.seconds <= 0.0)
        return {};
    const double perUpdate = pass.seconds / static_cast<double>(pass.updates);
    const double mbit = static_cast<double>(pass.bytes) * 8.0 / 1e6 / pass.seconds;
    // The swarm's steps meanwhile: the ones this peer replayed, plus what it fell further behind.
    const long swarmSteps = pass.updates + (pass.behindAfter - pass.behindBefore);
    char line[400];
    std::snprintf(line, sizeof line,
                  "replaying cannot catch up with the swarm on this link: %ld averaged steps took %.1f s "
                  "(%.1f s each, %.1f Mbit/s from donors) while the swarm took %ld; still %ld behind. It keeps "
                  "trying (a slower swarm or a faster link lets it in)",
                  pass.updates, pass.seconds, perUpdate, mbit, swarmSteps, pass.behindAfter);
    return line;
}

} // namespace dedloc
