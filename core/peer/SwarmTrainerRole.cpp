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

#include <cmath>

namespace dedloc {

namespace {

constexpr std::size_t LossHistoryLength = 512; // points of the loss chart kept

} // namespace

void SwarmPeer::Impl::runTrainer()
{
    const long lastEpoch = opt.maxEpoch > 0 ? opt.maxEpoch : manifest->schedule.totalSteps;
    const auto &t = manifest->training;
    const long checkpointEvery = opt.checkpointEvery > 0 ? opt.checkpointEvery : t.checkpointEveryNSteps;
    afterStateChange();
    GroupSearch search(*matchmaker, gradientSchema);
    long stepsSinceCheckpoint = 0;
    double lastSyncAttempt = -1e9;
    bool wasPaused = false;
    setState(PeerState::Training);
    while (!stopFlag.load() && trainer->step() < lastEpoch && !timeUp()) {
        if (pausedFlag.load()) {
            if (!wasPaused) {
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
            setState(PeerState::Training);
        }
        applyCaps();
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
        if (decision == StepDecision::CatchUp) {
            search.drop();
            catchUp();
            continue;
        }
        if (decision == StepDecision::Resync) {
            search.drop();
            long global;
            {
                std::lock_guard lock(mutex);
                global = tracker.global(now, trainer->step()).globalEpoch;
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
        if (expected < opt.minPeers) {
            // Neither compute nor step before the peers this run asks for are here: samples
            // computed alone would make up the whole batch before the others arrive.
            sleepFor(0.05);
            continue;
        }
        const bool alone = expected <= 1;
        if (!alone && !search.active() && (matchSoon || decision == StepDecision::Step))
            search.start(trainer->step(), [this, epoch = trainer->step()] { return expectedPeers(epoch); });
        if (decision == StepDecision::Step) {
            takeStep(search, alone);
            search.drop();
            if (++stepsSinceCheckpoint >= checkpointEvery) {
                trySave();
                stepsSinceCheckpoint = 0;
            }
            setState(PeerState::Training);
            continue;
        }
        const int fullMicroBatch = trainer->microBatchSize();
        const auto r = trainer->accumulateMicroBatch(fittedMicroBatch(now, fullMicroBatch));
        // Only full micro-batches update the throughput: a fitted one pays the same fixed
        // cost per call for fewer samples and would drag the estimate (and the ETA) down.
        const double rate = r.seconds > 0 ? r.samples / r.seconds : 0.0;
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
    search.drop();
    if (stepsSinceCheckpoint > 0)
        trySave();
    setMyRecord(0, 0.0); // the final epoch, for the control thread's last publish
}

void SwarmPeer::Impl::catchUp()
{
    long global;
    {
        std::lock_guard lock(mutex);
        global = tracker.global(unixNow(), trainer->step()).globalEpoch;
    }
    if (global != trainer->step() + 1)
        return;
    // Same parameters, the swarm's epoch (and schedule); the samples of the missed step are
    // dropped. They are a step old: the next group gives this peer the swarm's state.
    trainer->loadStateFlat(trainer->stateFlat(), global);
    repairWanted = true;
    matchmaker->setRepair(true);
    afterStateChange();
    log::info("swarm", "the swarm stepped to epoch " + std::to_string(global) + " without this peer: it goes on at that "
                       "epoch and takes the swarm's state in its next group instead of downloading it");
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

void SwarmPeer::Impl::takeStep(GroupSearch &search, bool alone)
{
    const long epoch = trainer->step();
    setState(PeerState::Averaging, "global step " + std::to_string(epoch + 1));
    std::optional<FormedGroup> group;
    std::string why = alone ? "no other peer at this epoch" : search.why();
    if (search.active() && search.epoch() == epoch) {
        // While the group forms, the others may step without us (we came too late): then
        // stop looking at once and resynchronise instead of waiting out the deadlines.
        bool overtaken = false;
        group = search.wait(
            [&] {
                std::lock_guard lock(mutex);
                return tracker.global(unixNow(), epoch).globalEpoch > epoch;
            },
            &overtaken);
        why = search.why();
        if (!group && overtaken) {
            // The swarm stepped without us: a local step would only diverge. Catch up or resync
            // instead (the next decision says which); the samples computed here are dropped.
            log::info("swarm", "the swarm stepped past epoch " + std::to_string(epoch) + " without this peer");
            setState(PeerState::Training);
            return;
        }
    }
    if (group && faultStallEpoch >= 0 && epoch >= faultStallEpoch) {
        log::warning("swarm", "FAULT: stalling in round " + group->info.groupId + " (DEDLOC_FAULT_STALL_ROUND)");
        while (!stopFlag.load())
            sleepFor(0.5);
    }
    const auto roundStart = std::chrono::steady_clock::now();
    const auto outcome = applyCollaborativeStep(*trainer, *allReduce, group, why, roundOptions());
    if (!outcome) {
        // Nothing computed here and nobody to average with (e.g. just after a state
        // download): no step; the tracker says Resync once the others have stepped.
        setState(PeerState::Training);
        sleepFor(0.1);
        return;
    }
    // Parameters left different from the group's (a step alone, a shard kept at local values)
    // are repaired in the next group this peer joins: it asks for a state round there.
    bool diverged = !outcome->averaged || !outcome->complete || repairWanted;
    bool stateRound = false;
    if (group) {
        strikeOffenders(*group, outcome->report);
        stateRound = averageStateNow(epoch) || group->info.stateRound();
        if (stateRound)
            diverged = !averageState(*group, epoch);
    } else if (!alone) {
        log::warning("swarm", outcome->status);
    }
    if (diverged != repairWanted)
        log::info("swarm", diverged ? "parameters may differ from the swarm's: the next group averages the state too"
                                    : "parameters agree with the group's again");
    repairWanted = diverged;
    matchmaker->setRepair(diverged);
    {
        std::lock_guard lock(mutex);
        swarmSamplesSeen += outcome->batchSamples;
        mySamplesSeen += outcome->localSamples;
    }
    const double roundSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - roundStart).count();
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
                             {"averaged", step.averaged}, {"round_s", roundSeconds},
                             {"shard_elements", step.shardElements}, {"complete", step.complete},
                             {"state_round", stateRound}};
    if (hasLoss)
        fields["loss"] = r.loss;
    if (validationLoss)
        fields["val_loss"] = *validationLoss;
    if (opt.hashParameters) {
        const auto p = trainer->parametersFlat();
        fields["params_sha"] = sha256Hex(p.data(), p.size() * sizeof(float));
    }
    metrics->write("step", fields);
    auto published = fields;
    published["peer_id"] = identity->peerId();
    published["name"] = opt.name;
    published["role"] = peerRoleName(opt.role);
    published["time"] = unixNow();
    const auto c = trainer->contribution();
    update([&](PeerSnapshot &s) {
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

bool SwarmPeer::Impl::trySave() { return saveCheckpointOrWarn(*trainer, checkpointDir); }

void SwarmPeer::Impl::applyCaps()
{
    ResourceCaps c;
    {
        std::lock_guard lock(mutex);
        if (!capsChanged)
            return;
        c = caps;
        capsChanged = false;
    }
    if (c.cpuThreads > 0)
        configureTorchThreads(c.cpuThreads);
    if (c.microBatchSize > 0)
        trainer->setMicroBatchSize(c.microBatchSize);
    upload.setRate(std::max(0.0, c.uploadBytesPerSecond));
    download.setRate(std::max(0.0, c.downloadBytesPerSecond));
    if (c.gpuMemoryFraction > 0.0)
        setAcceleratorMemoryFraction(std::min(1.0, c.gpuMemoryFraction));
}

} // namespace dedloc
