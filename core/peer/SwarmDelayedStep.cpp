// SwarmPeer's delayed parameter updates (peer/SwarmPeerImpl.h; docs/PROTOCOL.md "Delayed
// parameter updates"): at the step decision the trainer's gradient is detached, a background
// thread waits for the group and runs the round, and the worker computes the next step's
// micro-batches on the parameters it has (one step stale once the round's result is applied).
// The applied update is exactly the group's averaged gradient, as without the delay; only the
// gradients of the next step are computed one update early.
#include "peer/SwarmPeerImpl.h"

#include "util/Log.h"

#include <algorithm>
#include <cmath>

namespace dedloc {

void SwarmPeer::Impl::startDelayedStep(GroupSearch &search, bool alone)
{
    const long epoch = trainer->step();
    const long target = manifest->training.targetBatchSize;
    double swarmRate;
    {
        std::lock_guard lock(mutex);
        swarmRate = tracker.global(unixNow(), epoch).samplesPerSecond;
    }
    // This peer's part of the next batch at today's throughputs: the swarm's samples of the next
    // epoch are published only once its members applied this step, so each computes its share.
    // Records of peers a step apart are not in the swarm's rate: each expected peer counts at
    // least at this peer's rate.
    const double expected = static_cast<double>(expectedPeers(epoch));
    long share = target;
    if (emaSamplesPerSecond > 0)
        share = static_cast<long>(std::ceil(static_cast<double>(target) * emaSamplesPerSecond
                                            / std::max(swarmRate, expected * emaSamplesPerSecond)));
    StepInFlight &f = inFlight.emplace();
    f.epoch = epoch;
    f.alone = alone;
    f.decided = std::chrono::steady_clock::now();
    f.nextShare = std::clamp<long>(share, trainer->microBatchSize(), target);
    f.gradient = trainer->detachGradient();
    setState(PeerState::Training, "averaging global step " + std::to_string(epoch + 1) + " meanwhile");
    f.round = std::async(std::launch::async, [this, &search, epoch, alone, gradient = &f.gradient,
                                              options = gradientRoundOptions(epoch)] {
        auto w = waitForGroup(search, epoch, alone);
        std::optional<StepOutcome> outcome;
        auto o = options; // results checked where the group checks them (known only now)
        o.checkResults = w.group && checksResults(w.group->info, o.aggregation, o.codec);
        if (w.group || !w.overtaken)
            outcome = averageDetachedGradient(*allReduce, w.group, w.why, *gradient, o, opt.tamperGradient, mergeHook());
        return std::pair{std::move(w), std::move(outcome)};
    });
}

bool SwarmPeer::Impl::computeWhileInFlight()
{
    if (pausedFlag.load() || stopFlag.load() || timeUp())
        return false;
    if (inFlight->round.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
        return false;
    // Still at the epoch before the step, with the samples of the step being averaged (as a peer
    // publishes in its round without the delay): a member that has not decided yet must still
    // see the batch complete. Samples of the next epoch are published once it is applied.
    setMyRecord(inFlight->gradient.samples, emaSamplesPerSecond);
    const long left = inFlight->nextShare - trainer->accumulatedSamples();
    if (left <= 0) { // this peer's share of the next batch is done: wait for the round
        (void)inFlight->round.wait_for(std::chrono::milliseconds(50));
        return true;
    }
    applyCaps();
    computeMicroBatch(static_cast<int>(std::min<long>(left, trainer->microBatchSize())));
    return true;
}

void SwarmPeer::Impl::finishDelayedStep()
{
    auto [joined, outcome] = inFlight->round.get();
    const StepInFlight f = std::move(*inFlight);
    inFlight.reset();
    if (!joined.group && joined.overtaken) {
        // The swarm stepped without us: the detached gradient is dropped, the next decision
        // catches up or resyncs (which also drops the micro-batches computed meanwhile).
        setState(PeerState::Training);
        return;
    }
    if (outcome)
        finishDetachedStep(*trainer, f.gradient, *outcome);
    overlapSamples = trainer->accumulatedSamples();
    heldShare = f.nextShare;
    holdShareUntil = unixNow() + 2.0 * opt.progressPeriod + 0.5;
    afterStep(joined.group, outcome, f.epoch, f.alone, f.decided);
    overlapSamples = -1;
}

} // namespace dedloc
