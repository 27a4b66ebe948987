#pragma once
// EpochClock: when each recent epoch began as one peer saw it, the time base of ProgressTracker's
// bound on claimed counts (docs/PROTOCOL.md "Counts bounded by throughput": a peer's samples
// count at most cap x the time since the epoch began). An epoch's beginning is the first of
//   - ownStepEnded(e): this peer's own record showed e, one above its record before (its step
//     ended; without delayed parameter updates no honest peer computes for an epoch before its
//     step of the epoch before; with them, this only replaces an unknown beginning);
//   - decidedStep(e - 1), with delayed updates only: this peer's first Step decision at the epoch
//     before (the next epoch's shares are computed while the round runs);
//   - sawGlobal(e): e became the global epoch here, provided e - 1 was the global epoch here and
//     this peer had read other peers' records for `settle` seconds already; otherwise unknown (an
//     epoch under way when this peer started, or reached in a jump).
// It is never before this peer's first Step decision at e - 1, nor, without delayed updates,
// before the end of its own step into e after that decision, where it made them: a stranger's
// record one epoch ahead, global here while it lived (or a stranger that ends its round before
// the honest members and steps first), starts no clock for this peer. A peer that does not
// train (a monitor, an auxiliary) has only the global epoch to go by. The first note of an
// epoch stays, except that a seen beginning replaces an unknown one; the floors then apply.
// Epochs more than two below the highest global epoch are forgotten.
//
// Times are seconds on the caller's clock. Pure bookkeeping, not thread-safe: ProgressTracker
// notes into it from its const views, under its caller's lock.
#include <limits>
#include <map>

namespace dedloc {

class EpochClock {
public:
    // `delayedUpdates`: the run computes during its rounds (see above); `settle`: seconds of
    // reading others' records before a global epoch's change counts as seen (the clock skew).
    explicit EpochClock(bool delayedUpdates = false, double settle = 3.0);

    void sawForeignRecord(double now); // a record of another peer was read (the first call counts)
    void sawGlobal(long epoch, double now);
    void ownStepEnded(long epoch, double now);
    void decidedStep(long epoch, double now);

    // When `epoch` began here; NaN when unknown (or not noted).
    [[nodiscard]] double began(long epoch) const;

private:
    void note(long epoch, double at, bool seen);
    void raiseFloor(long epoch, double at);

    bool m_delayedUpdates;
    double m_settle;
    double m_firstForeign = std::numeric_limits<double>::quiet_NaN();
    long m_highestGlobal = -1;
    std::map<long, double> m_began;   // NaN: unknown
    std::map<long, double> m_decided; // this peer's first Step decision at each epoch
    std::map<long, double> m_floor;   // the earliest each epoch may have begun (see above)
};

} // namespace dedloc
