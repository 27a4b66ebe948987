#pragma once
// What one peer has given to the run, as the trainer counts it (checkpointed, so it survives
// restarts) and as the front ends show it, and what a monitor of the swarm recorded of it.
// Units: samples (training sequences), seconds, global steps.
#include <string>
#include <utility>
#include <vector>

namespace dedloc {

struct ContributionTotals {
    long long samples = 0;        // samples this peer computed gradients on
    double computeSeconds = 0.0;  // forward/backward wall time
    long stepsTakenPart = 0;      // global steps whose average included this peer's gradients
};

// The most step ranges a credit record carries (the newest kept): 64 gaps are plenty to show
// where a monitor missed steps, and keep the record far below a DHT value's size.
inline constexpr std::size_t MaxCreditRanges = 64;

// What a monitor recorded of one peer's steps (the step metrics the peer published, as the
// monitor received them): the outside confirmation of the peer's own count.
struct MonitorCredit {
    std::string monitorId;                    // the monitor's peer id; empty: no record yet
    long long samples = 0;                    // samples over the recorded steps
    long steps = 0;                           // steps recorded
    std::vector<std::pair<long, long>> ranges; // recorded steps as [first, last], oldest first
    double at = 0.0;                          // Unix seconds of the monitor's record
    [[nodiscard]] long throughStep() const { return ranges.empty() ? -1 : ranges.back().second; }
    [[nodiscard]] bool recorded(long step) const
    {
        for (const auto &[first, last] : ranges)
            if (step >= first && step <= last)
                return true;
        return false;
    }
};

// This peer's own count over the same steps, to set beside a MonitorCredit.
struct OwnCreditCount {
    long long samplesInRecordedSteps = 0; // own samples over the steps the monitor recorded
    long stepsMissed = 0;                 // own steps within the monitor's span it did not record
    long long samplesMissed = 0;          // ... and their samples
};

} // namespace dedloc
