// SwarmPeer's trainer role (DeDLOC section 3; peer/SwarmPeerImpl.h): micro-batches toward the
// global batch, matchmaking shortly before the step, the averaged (or local) step, its report,
// validation and checkpoints.
#include "peer/SwarmPeerImpl.h"

#include "system/TorchRuntime.h"
#include "train/PeerSetup.h"
#include "train/StepLine.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace dedloc {

namespace {

constexpr std::size_t LossHistoryLength = 512; // points of the loss chart kept

double steadySeconds()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace

void SwarmPeer::Impl::runTrainer()
{
    const long lastEpoch = opt.maxEpoch > 0 ? opt.maxEpoch : manifest->schedule.totalSteps;
    const auto &t = manifest->training;
    const long checkpointEvery = opt.checkpointEvery > 0 ? opt.checkpointEvery : t.checkpointEveryNSteps;
    afterStateChange();
    // The epoch's other groups learn at once that this one formed (they wait for its average).
    GroupSearch search(*matchmaker, gradientSchema, [this](const FormedGroup &g) { merger->announce(g.info); });
    // A round in flight waits on `search`: it ends before the search does, also on an exception.
    struct JoinRoundInFlight {
        std::optional<StepInFlight> &inFlight;
        ~JoinRoundInFlight()
        {
            if (inFlight && inFlight->round.valid())
                inFlight->round.wait();
            inFlight.reset();
        }
    } joinRoundInFlight{inFlight};
    long stepsSinceCheckpoint = 0;
    double lastSyncAttempt = -1e9;
    double lastReplayFailed = -1e9;
    bool wasPaused = false;
    bool minPeersSeen = false;
    std::string lastWaiting; // the last "waiting for N peers" logged
    setState(PeerState::Training);
    // At the time limit a peer that is looking for (or has found) the group of its epoch stays
    // until that step: its group would otherwise wait out the round's timeouts for it. The step
    // comes about one matchmaking time after the search began; the grace bounds a late one (the
    // longest search, averaging/Matchmaker.h: after a leader that never began, about 2.5 windows).
    double graceUntil = -1.0;
    const auto staysForItsGroup = [&] {
        if (!search.active() || search.epoch() != trainer->step() || (search.ended() && !search.formed()))
            return false;
        if (graceUntil < 0) {
            graceUntil = unixNow() + 2.5 * opt.matchmaking.window + 3.0 * opt.matchmaking.requestTimeout;
            log::info("swarm", "time limit reached: finishing the step of the group this peer has joined");
        }
        return unixNow() < graceUntil;
    };
    const auto stepTaken = [&] {
        if (++stepsSinceCheckpoint >= checkpointEvery) {
            trySave();
            stepsSinceCheckpoint = 0;
        }
        setState(PeerState::Training);
    };
    while (!stopFlag.load() && trainer->step() < lastEpoch && (inFlight || !timeUp() || staysForItsGroup())) {
        if (inFlight) { // delayed parameter updates: the last step's round runs meanwhile
            if (!computeWhileInFlight()) {
                finishDelayedStep();
                search.drop();
                stepTaken();
            }
            continue;
        }
        if (pausedFlag.load()) {
            if (!wasPaused) {
                // A group this peer has joined (or is joining) would wait for its part: it takes
                // part with weight 0 and applies the group's step, then stops computing.
                if (search.active() && search.epoch() == trainer->step())
                    takeStep(search, false, false);
                search.drop();
                releaseAcceleratorMemory();
                wasPaused = true;
            }
            setMyRecord(0, 0.0);
            sleepFor(0.1);
            continue;
        }
        if (wasPaused) {
            wasPaused = false;
            restartUtilisation();
            setState(PeerState::Training);
        }
        applyCaps();
        checkModelAgreement();
        const double now = unixNow();
        setMyRecord(trainer->accumulatedSamples(), emaSamplesPerSecond);
        StepDecision decision;
        bool matchSoon;
        std::size_t expected;
        {
            std::lock_guard lock(mutex);
            decision = tracker.decide(trainer->step(), now);
            matchSoon = tracker.shouldStartMatchmaking(trainer->step(), now);
        }
        expected = expectedPeers(trainer->step());
        // The swarm stepped past this epoch, but a group of it has formed with this peer: the
        // group waits for its part, and its step merges with the others' (GroupMerge.h).
        if (decision == StepDecision::Resync && search.formed() && search.epoch() == trainer->step())
            decision = StepDecision::Step;
        // While other groups of this epoch still run, this peer's search may still find one.
        if (decision == StepDecision::Resync && search.active() && search.epoch() == trainer->step()
            && !search.ended() && merger->groupsStillRunning(trainer->step())) {
            sleepFor(0.05);
            continue;
        }
        if (decision == StepDecision::Resync) {
            search.drop();
            if (timeUp())
                break; // the swarm stepped without this peer: nothing to finish, no download
            long global;
            {
                std::lock_guard lock(mutex);
                global = tracker.global(now, trainer->step()).globalEpoch;
            }
            // Replaying an update takes its compressed average (about a second on a home
            // downlink): at once, so that a peer that just fell one step behind is back early in
            // the next epoch, not at its end; with one update left it joins the group of the
            // swarm's epoch meanwhile. A failed replay, and downloads, wait 2 s between tries.
            if (now - lastReplayFailed >= 2.0) {
                const bool replayed = replayUpdates(global, [&](long epoch) { searchWhileReplaying(search, epoch); });
                leaveSearchBehind(search);
                if (replayed) {
                    setState(PeerState::Training);
                    continue;
                }
                lastReplayFailed = now;
            }
            if (now - lastSyncAttempt < 2.0) {
                sleepFor(0.2);
                continue;
            }
            lastSyncAttempt = now;
            if (syncState(global))
                setState(PeerState::Training);
            continue;
        }
        if (!minPeersSeen) {
            // Neither compute nor step before the peers this run asks for are here: samples
            // computed alone would make up the whole batch before the others arrive. Once they
            // were, training goes on if some leave (or drop out of this peer's view of the DHT).
            // The wait shows as Connecting: "waiting for 3 peers, 1 here" (this one included).
            if (expected < opt.minPeers) {
                const std::string waiting =
                    "waiting for " + std::to_string(opt.minPeers) + " peers, " + std::to_string(expected) + " here";
                if (waiting != lastWaiting)
                    log::info("swarm", waiting + " (--min-peers): nothing is computed before they are");
                lastWaiting = waiting;
                setState(PeerState::Connecting, waiting);
                sleepFor(0.05);
                continue;
            }
            if (!lastWaiting.empty())
                log::info("swarm", std::to_string(expected) + " peers here (--min-peers " + std::to_string(opt.minPeers)
                                       + "): training");
            setState(PeerState::Training);
            minPeersSeen = true;
            restartUtilisation();
        }
        const bool alone = expected <= 1;
        if (!alone && !search.active() && (matchSoon || decision == StepDecision::Step)) {
            offerStateDigest(trainer->step());
            search.start(trainer->step(), [this, epoch = trainer->step()] { return expectedPeers(epoch); });
        }
        if (faultPauseEpoch >= 0 && trainer->step() >= faultPauseEpoch && search.ended()) {
            log::warning("swarm", "FAULT: pausing with the group search ended (DEDLOC_FAULT_PAUSE_IN_GROUP)");
            faultPauseEpoch = -1;
            pausedFlag = true;
            continue;
        }
        if (faultTimeUpEpoch >= 0 && trainer->step() >= faultTimeUpEpoch && search.formed()) {
            log::warning("swarm", "FAULT: time limit with a group formed (DEDLOC_FAULT_TIME_UP_IN_GROUP)");
            faultTimeUpEpoch = -1;
            faultTimeUp = true;
            continue;
        }
        if (decision == StepDecision::Step) {
            if (manifest->averaging().delayedParameterUpdates && trainer->accumulatedSamples() > 0) {
                startDelayedStep(search, alone);
                continue;
            }
            takeStep(search, alone);
            search.drop();
            stepTaken();
            continue;
        }
        // maxSamplesPerEpoch is the most any peer accepts in a record or a PART's weight; a peer
        // the swarm counts below its speed (ProgressTracker's rate cap) waits there for the step.
        const long room = maxSamplesPerEpoch(manifest->training.targetBatchSize) - trainer->accumulatedSamples();
        if (holdsItsShare(now) || room <= 0) {
            sleepFor(0.05);
            continue;
        }
        computeMicroBatch(static_cast<int>(std::min<long>(room, fittedMicroBatch(now, trainer->microBatchSize()))));
    }
    if (inFlight) { // stopped (or out of time) with a round running: its group gets our part
        finishDelayedStep();
        ++stepsSinceCheckpoint;
    }
    search.drop();
    if (stepsSinceCheckpoint > 0)
        trySave();
    setMyRecord(0, 0.0); // the final epoch, for the control thread's last publish
    serveTheLastStep(lastEpoch);
    logSessionSummary(lastEpoch);
}

void SwarmPeer::Impl::restartUtilisation()
{
    utilisation.restart(steadySeconds(), trainer->contribution().computeSeconds);
}

void SwarmPeer::Impl::computeMicroBatch(int samples)
{
    const int fullMicroBatch = trainer->microBatchSize();
    const auto r = trainer->accumulateMicroBatch(samples);
    // Heat and noise: computing only a share of the time, the trainer rests after each
    // micro-batch; its throughput (what the swarm's ETA counts on) includes the rest.
    const double rest = throttleRestSeconds(r.seconds, computeShare);
    if (rest > 0.0)
        sleepFor(rest);
    // Only full micro-batches update the throughput: a fitted one pays the same fixed
    // cost per call for fewer samples and would drag the estimate (and the ETA) down.
    const double rate = r.seconds > 0 ? r.samples / (r.seconds + rest) : 0.0;
    if (r.samples >= fullMicroBatch || emaSamplesPerSecond == 0.0)
        emaSamplesPerSecond = emaSamplesPerSecond == 0.0 ? rate : 0.9 * emaSamplesPerSecond + 0.1 * rate;
    const auto c = trainer->contribution();
    update([&](PeerSnapshot &s) {
        s.localSamplesPerSecond = emaSamplesPerSecond;
        s.session = {c.samples - sessionSamplesStart, c.computeSeconds - sessionComputeStart,
                     c.stepsTakenPart - sessionStepsStart};
        s.allTime = c;
    });
}

void SwarmPeer::Impl::setRepair(bool wanted)
{
    if (wanted != repairWanted)
        log::info("swarm", wanted ? "parameters may differ from the swarm's: the next group averages the state too"
                                  : "parameters agree with the swarm's again");
    repairWanted = wanted;
    matchmaker->setRepair(wanted);
}

int SwarmPeer::Impl::fittedMicroBatch(double now, int fullMicroBatch)
{
    double eta;
    {
        std::lock_guard lock(mutex);
        const auto g = tracker.global(now, trainer->step());
        if (g.globalEpoch != trainer->step())
            return fullMicroBatch;
        eta = g.eta;
    }
    return fitMicroBatch(eta, emaSamplesPerSecond, fullMicroBatch);
}

SwarmPeer::Impl::GroupWait SwarmPeer::Impl::waitForGroup(GroupSearch &search, long epoch, bool alone)
{
    GroupWait w;
    w.why = alone ? "no other peer at this epoch" : search.why();
    if (alone)
        log::debug("swarm", "alone at epoch " + std::to_string(epoch) + ": " + describeRecords());
    if (search.active() && search.epoch() == epoch) {
        // While the group forms, the others may step without us (we came too late): then
        // stop looking at once and resynchronise instead of waiting out the deadlines.
        w.group = search.wait(
            [&] {
                bool past;
                {
                    std::lock_guard lock(mutex);
                    past = tracker.global(unixNow(), epoch).globalEpoch > epoch;
                }
                return past && !merger->groupsStillRunning(epoch); // other groups of it still run
            },
            &w.overtaken);
        w.why = search.why();
        if (!w.group && w.overtaken)
            log::info("swarm", "the swarm stepped past epoch " + std::to_string(epoch) + " without this peer");
    }
    // As a member only: a leader that stalls here has not begun its group, so its members fall
    // back to local steps instead of meeting a round that stalls.
    if (w.group && !w.group->leader && faultStallEpoch >= 0 && epoch >= faultStallEpoch) {
        log::warning("swarm", "FAULT: stalling in round " + w.group->info.groupId + " (DEDLOC_FAULT_STALL_ROUND)");
        while (!stopFlag.load())
            sleepFor(0.5);
    }
    return w;
}

GroupMergeHook SwarmPeer::Impl::mergeHook()
{
    GroupMergeHook hook;
    hook.merge = [this](const FormedGroup &group, const std::shared_ptr<const AveragedUpdate> &own, double roundSeconds,
                        const std::shared_ptr<const RoundEvidence> &evidence) {
        const long epoch = own->epoch;
        lastRoundSeconds = roundSeconds;
        return merger->merge(group.info, own, [this, epoch] { return expectedPeers(epoch, true); }, roundSeconds,
                             stopFlag, evidence);
    };
    hook.adopt = [this](long epoch, std::size_t elements, const GroupInfo *round) {
        if (expectedPeers(epoch, true) <= 1)
            return MergeResult{{}, 0, 0, 0, false, false, {}}; // alone in the swarm: its own step is the swarm's
        return merger->adopt(
            epoch, elements, [this, epoch] { return expectedPeers(epoch, true); }, stopFlag,
            round ? *round : GroupInfo{}, lastRoundSeconds);
    };
    return hook;
}

void SwarmPeer::Impl::takeStep(GroupSearch &search, bool alone, bool contribute)
{
    const long epoch = trainer->step();
    const auto decided = std::chrono::steady_clock::now();
    setState(PeerState::Averaging, "global step " + std::to_string(epoch + 1));
    const GroupWait w = waitForGroup(search, epoch, alone);
    // Overtaken: a local step would only diverge. Catch up or resync instead (the next decision
    // says which); the samples computed here are dropped. Pausing with no group waiting: nothing.
    if ((!w.group && w.overtaken) || (!w.group && !contribute)) {
        setState(PeerState::Training);
        return;
    }
    if (!contribute)
        log::info("swarm", "pausing: taking part in group " + w.group->info.groupId + " with weight 0 first");
    const auto options = gradientRoundOptions(epoch, w.group ? &w.group->info : nullptr);
    const auto outcome = applyCollaborativeStep(*trainer, *allReduce, w.group, w.why, options, contribute,
                                                opt.tamperGradient, mergeHook());
    afterStep(w.group, outcome, epoch, alone, decided);
}

void SwarmPeer::Impl::afterStep(const std::optional<FormedGroup> &group, const std::optional<StepOutcome> &outcome,
                                long epoch, bool alone, std::chrono::steady_clock::time_point decided)
{
    if (!outcome) {
        // Nothing computed here and nobody to average with (e.g. just after a state
        // download): no step; the tracker says Resync once the others have stepped. A group
        // that expects a state round still gets this member's part of it.
        if (group && stateRoundDue(*group, epoch))
            (void)averageState(*group, epoch);
        setState(PeerState::Training);
        sleepFor(0.1);
        return;
    }
    // Parameters left different from the group's (a step alone beside others, a shard whose
    // average never came back) are repaired in the next group this peer joins: it asks for a
    // state round there. (Excluding a sender from our own shard does not: every member that
    // received our results, the excluded one included, holds what we hold.) A peer alone in the
    // swarm holds the swarm's state by definition: waiting for a donor at every step would only
    // slow it down; whoever comes back later resynchronises from it.
    bool diverged = (!outcome->averaged && !alone)
                    || (outcome->averaged && outcome->report.receivedFraction < 1.0 && !outcome->tookMerge)
                    || (repairWanted && !alone);
    bool stateRound = false;
    stateRoundChanged = false;
    if (group) {
        afterRound(*group, outcome->report);
        stateRound = stateRoundDue(*group, epoch);
        if (stateRound)
            diverged = !averageState(*group, epoch);
    } else if (!alone) {
        log::warning("swarm", outcome->status);
    }
    setRepair(diverged);
    keepUpdate(outcome->update, !diverged && !stateRoundChanged && outcome->mergedGroups <= 1);
    if (diverged && repairByDownload())
        setRepair(false);
    stateIsSwarms = !repairWanted;
    {
        std::lock_guard lock(mutex);
        swarmSamplesSeen += outcome->batchSamples;
        mySamplesSeen += outcome->localSamples;
    }
    const double roundSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - decided).count();
    afterStateChange();
    std::optional<double> validationLoss;
    if (validationDue(outcome->result.step, outcome->myIndex, outcome->groupSize))
        validationLoss = validate();
    reportStep(*outcome, roundSeconds, stateRound, validationLoss);
}

bool SwarmPeer::Impl::validationDue(long step, std::size_t indexInGroup, std::size_t groupSize) const
{
    const long every = manifest->training.validationEveryNSteps;
    if (every <= 0 || step % every != 0)
        return false;
    // After an averaged step every member holds the same parameters: one validation per group
    // is enough, by each member in turn (members are sorted by peer id, so all agree who).
    return groupSize <= 1 || static_cast<std::size_t>(step / every) % groupSize == indexInGroup;
}

void SwarmPeer::Impl::reportStep(const StepOutcome &step, double roundSeconds, bool stateRound,
                                 std::optional<double> validationLoss)
{
    const StepResult &r = step.result;
    const long localSamples = step.localSamples;
    long globalEpoch;
    int peers;
    {
        std::lock_guard lock(mutex);
        globalEpoch = std::max(snap.globalEpoch, r.step);
        peers = static_cast<int>(snap.peers.size());
    }
    // A peer that computed nothing for this step (it just downloaded the state and the
    // group formed before its first micro-batch) has no loss of its own to report.
    const bool hasLoss = localSamples > 0;
    nlohmann::json fields = {{"step", r.step}, {"samples", localSamples}, {"batch_samples", r.samples},
                             {"samples_per_s", emaSamplesPerSecond}, {"lr", r.learningRate},
                             {"grad_norm", std::isfinite(r.gradNorm) ? r.gradNorm : -1.0}, {"applied", r.applied},
                             {"global_epoch", globalEpoch}, {"peers", peers}, {"group_size", step.groupSize},
                             {"merged_groups", step.mergedGroups}, {"merged_peers", step.mergedPeers},
                             {"averaged", step.averaged}, {"round_s", roundSeconds},
                             {"shard_elements", step.shardElements}, {"complete", step.complete},
                             {"state_round", stateRound}};
    if (hasLoss)
        fields["loss"] = r.loss;
    if (validationLoss)
        fields["val_loss"] = *validationLoss;
    if (uploadMbit > 0)
        fields["upload_mbit"] = uploadMbit;
    if (overlapSamples >= 0)
        fields["overlap_samples"] = overlapSamples;
    const auto c = trainer->contribution();
    if (const auto share = utilisation.step(steadySeconds(), c.computeSeconds))
        fields["utilisation"] = *share;
    if (opt.hashParameters) {
        const auto p = trainer->sharedParametersFlat();
        fields["params_sha"] = sha256Hex(p.data(), p.size() * sizeof(float));
    }
    addMemoryFields(fields);
    metrics->write("step", fields);
    ++stepsThisSession;
    stepsAveragedThisSession += step.averaged ? 1 : 0;
    recordOwnStep(r.step, localSamples, hasLoss ? r.loss : -1.0);
    auto published = fields;
    published["peer_id"] = identity->peerId();
    published["name"] = opt.name;
    published["role"] = peerRoleName(opt.role);
    published["time"] = unixNow();
    update([&](PeerSnapshot &s) {
        s.computeUtilisation = utilisation.recent().value_or(-1.0);
        s.localEpoch = r.step;
        if (hasLoss) {
            s.lastLoss = r.loss;
            s.lossHistory.push_back({r.step, r.loss});
            if (s.lossHistory.size() > LossHistoryLength)
                s.lossHistory.erase(s.lossHistory.begin());
        }
        s.lastRoundStatus = step.status;
        s.session = {c.samples - sessionSamplesStart, c.computeSeconds - sessionComputeStart,
                     c.stepsTakenPart - sessionStepsStart};
        s.allTime = c;
        s.shareOfSwarm = swarmSamplesSeen > 0 ? static_cast<double>(mySamplesSeen) / static_cast<double>(swarmSamplesSeen) : 0.0;
        recentSteps.emplace_back(r.step, localSamples);
        if (recentSteps.size() > RecentSteps)
            recentSteps.erase(recentSteps.begin());
        published["steps"] = recentSteps;
        pendingMetrics = published.dump();
    });
    StepLineFields line;
    line.name = opt.name;
    line.step = r.step;
    if (hasLoss)
        line.loss = r.loss;
    line.samplesPerSecond = emaSamplesPerSecond;
    line.peers = peers;
    line.status = step.status;
    line.applied = r.applied;
    printLine(opt.statusOut, stepLine(line));
}

double SwarmPeer::Impl::validate()
{
    const double v = trainer->validationLoss();
    printLine(opt.statusOut, validationLine(opt.name, trainer->step(), v));
    metrics->write("validation", {{"step", trainer->step()}, {"val_loss", v}});
    return v;
}

} // namespace dedloc
