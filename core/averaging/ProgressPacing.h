#pragma once
// Pacing of a peer's progress (docs/PROTOCOL.md "Progress records and the step trigger"): how
// often it publishes and reads records, how long a record lives, and how large its last
// micro-batch before a step is. Pure functions of the swarm's ETA (averaging/ProgressTracker.h)
// and this peer's own figures; no I/O, any thread.

namespace dedloc {

// Samples for this peer's next micro-batch, so that it ends by the ETA of the global batch rather
// than a full micro-batch after it (the group would wait in the round for the last peer still
// computing; up to one micro-batch per step). `etaSeconds` from GlobalProgress, `samplesPerSecond`
// this peer's own throughput, `fullMicroBatch` its configured micro-batch (samples, >= 1).
// Returns ceil(samplesPerSecond * eta) clamped to [1, fullMicroBatch]; fullMicroBatch when the
// ETA or the throughput is unknown (non-finite, <= 0 throughput). Our addition: hivemind always
// computes full micro-batches.
[[nodiscard]] int fitMicroBatch(double etaSeconds, double samplesPerSecond, int fullMicroBatch);

// Seconds until a peer's next progress record and read (docs/PROTOCOL.md "Progress records and
// the step trigger"): the base period near a step, longer while the step is far, so that the
// control plane's bytes per peer fall with the length of a step (hivemind's tracker adapts its
// refresh to the ETA the same way; the rule here is ours). With `eta` the seconds to the
// swarm's next step and `settled` the seconds since this peer last saw an epoch change (its own
// or the swarm's):
//     base                                       if settled < 3 base + 5 (records and donors of a
//                                                step are awaited right after it)
//     clamp((eta - matchmaking) / 4, base, max)  otherwise (max when the ETA is unknown or infinite)
// so each wait ends before a quarter of the time left to matchmaking, and the period has shrunk
// back to `base` once the ETA is within matchmaking + 4 base. `max` <= `base`: always `base`.
[[nodiscard]] double adaptiveProgressPeriod(double base, double max, double eta, double matchmaking, double settled);
// How long a progress record lives (seconds) when its publisher's next turn comes after `wait`
// seconds (from adaptiveProgressPeriod) with base period `base`: three such turns, never under
// 10 s or 5 base periods, so a reader forgets a vanished peer after about three of its turns.
[[nodiscard]] double progressRecordTtl(double base, double wait);

} // namespace dedloc
