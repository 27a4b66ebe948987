#pragma once
// Progress records and tracker options for the tests of averaging/ProgressTracker: a record made
// at `time` that lives 60 s, and a tracker with the given target batch.
#include "averaging/ProgressTracker.h"

#include <string>

namespace dedloc::test {

inline ProgressRecord progressRecord(const std::string &id, long epoch, long samples, double sps, double time,
                                     bool client = false, PeerRole role = PeerRole::Trainer)
{
    ProgressRecord r;
    r.peerId = id;
    r.epoch = epoch;
    r.samplesAccumulated = samples;
    r.samplesPerSecond = sps;
    r.time = time;
    r.expiresAt = time + 60.0;
    r.clientMode = client;
    r.role = role;
    return r;
}

// Target `target`, at least half of it reported before extrapolation may complete it, matchmaking
// 5 s before the ETA.
inline TrackerOptions trackerOptions(long target)
{
    TrackerOptions o;
    o.targetBatchSize = target;
    o.minReportedFraction = 0.5;
    o.matchmakingTime = 5.0;
    return o;
}

} // namespace dedloc::test
