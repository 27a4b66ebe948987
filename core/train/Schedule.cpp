#include "train/Schedule.h"

#include <algorithm>

namespace dedloc {

double LinearWarmupDecay::at(long step) const
{
    if (step < 0)
        return 0.0;
    if (step < warmupSteps)
        return peak * static_cast<double>(step) / static_cast<double>(warmupSteps);
    const long span = std::max(1L, totalSteps - warmupSteps);
    return peak * std::max(0.0, static_cast<double>(totalSteps - step) / static_cast<double>(span));
}

} // namespace dedloc
