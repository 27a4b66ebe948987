#include "averaging/ProgressPacing.h"

#include <algorithm>
#include <cmath>

namespace dedloc {

int fitMicroBatch(double etaSeconds, double samplesPerSecond, int fullMicroBatch)
{
    const int full = std::max(1, fullMicroBatch);
    if (!std::isfinite(etaSeconds) || !std::isfinite(samplesPerSecond) || samplesPerSecond <= 0.0)
        return full;
    const double fit = std::ceil(samplesPerSecond * std::max(0.0, etaSeconds));
    return fit >= full ? full : std::max(1, static_cast<int>(fit));
}

double adaptiveProgressPeriod(double base, double max, double eta, double matchmaking, double settled)
{
    if (!(max > base) || !(settled >= 3.0 * base + 5.0))
        return base;
    if (!std::isfinite(eta) || eta < 0.0)
        return max;
    return std::clamp((eta - matchmaking) / 4.0, base, max);
}

double progressRecordTtl(double base, double wait)
{
    return std::max({10.0, 5.0 * base, 3.0 * wait});
}

} // namespace dedloc
