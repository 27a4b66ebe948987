#pragma once
// Compute utilisation: the share of a trainer's wall time spent computing (forward and backward
// passes), per global step and over the last steps: what the volunteer sees as "computing 96% of
// the time" and what the metrics record as `utilisation`. Everything else a trainer does between
// two steps counts as idle: waiting for the group, the averaging round, a state round or download,
// validation, checkpoints. Times in seconds, from any clock that only goes forward; compute
// seconds are the trainer's running total (ContributionTotals::computeSeconds).
// Not thread-safe (the trainer's thread). Pure arithmetic: no errors.
#include <cstddef>
#include <deque>
#include <optional>
#include <utility>

namespace dedloc {

class ComputeUtilisation final {
public:
    // `window`: steps the recent utilisation is taken over (>= 1).
    explicit ComputeUtilisation(std::size_t window = 10);

    // Starts an interval at (wall, compute) without ending one: at the start of training and on
    // resume after a pause (paused time is not idle time of the training).
    void restart(double wallSeconds, double computeSeconds);
    // Ends the interval at a step and starts the next: returns compute / wall of the interval,
    // clamped to [0, 1], or nothing before any restart() or when no wall time passed.
    std::optional<double> step(double wallSeconds, double computeSeconds);
    // Over the last `window` intervals: their compute seconds summed / their wall seconds
    // summed (long intervals weigh more, as they should). Nothing before the first step().
    [[nodiscard]] std::optional<double> recent() const;

private:
    std::size_t m_window;
    std::optional<std::pair<double, double>> m_start; // (wall, compute) of the open interval
    std::deque<std::pair<double, double>> m_intervals; // (wall, compute) seconds, oldest first
};

} // namespace dedloc
