#pragma once
// What one peer has given to the run, as the trainer counts it (checkpointed, so it survives
// restarts) and as the front ends show it. Units: samples (training sequences), seconds.
namespace dedloc {

struct ContributionTotals {
    long long samples = 0;        // samples this peer computed gradients on
    double computeSeconds = 0.0;  // forward/backward wall time
    long stepsTakenPart = 0;      // global steps whose average included this peer's gradients
};

} // namespace dedloc
