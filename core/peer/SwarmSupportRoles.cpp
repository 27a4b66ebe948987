// SwarmPeer's auxiliary and monitor roles (peer/SwarmPeerImpl.h): an auxiliary reduces shards
// with weight 0; a monitor keeps the latest state (checkpointed and archived) for donors and,
// when it reduces, also helps rounds as an auxiliary does.
#include "peer/SwarmPeerImpl.h"

#include "monitor/CheckpointArchive.h"
#include "eval/LabelledText.h"
#include "run/RunPaths.h"
#include "train/Checkpoint.h"
#include "util/Error.h"
#include "util/Log.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace dedloc {

void SwarmPeer::Impl::runAuxiliary()
{
    const std::string idle = "auxiliary: averaging only";
    setState(PeerState::Training, idle);
    long doneEpoch = -1;
    while (!stopFlag.load() && !timeUp()) {
        setMyRecord(0, 0.0);
        if (pausedFlag.load()) {
            sleepFor(0.1);
            continue;
        }
        helpNextRound(doneEpoch, idle);
        sleepFor(0.05);
    }
}

void SwarmPeer::Impl::helpNextRound(long &doneEpoch, const std::string &idle)
{
    const double now = unixNow();
    long global;
    bool soon;
    {
        std::lock_guard lock(mutex);
        global = tracker.global(now).globalEpoch;
        soon = tracker.shouldStartMatchmaking(global, now) || tracker.decide(global, now) == StepDecision::Step;
    }
    if (global <= doneEpoch || !soon || expectedPeers(global) < 2)
        return;
    setState(PeerState::Averaging, "helping global step " + std::to_string(global + 1));
    // Looking for a group of an epoch the swarm has already left is pointless: stop
    // as soon as the global epoch moves on, and look for the current one instead.
    GroupSearch search(*matchmaker, gradientSchema);
    offerStateDigest(global); // a monitor that holds the group's state needs no state round
    search.start(global, [this, global] { return expectedPeers(global); });
    const auto group = search.wait([&] {
        std::lock_guard lock(mutex);
        return stopFlag.load() || tracker.global(unixNow()).globalEpoch > global;
    });
    if (group) {
        std::vector<float> values(static_cast<std::size_t>(trainer->parameterCount()));
        auto o = roundOptions();
        o.myWeight = 0.0;
        const auto report = allReduce->run(group->info.groupId, group->info.members, group->myIndex, values, o);
        afterRound(*group, report);
        if (stateRoundDue(*group, global))
            (void)averageState(*group, global);
        nlohmann::json round{{"step", global + 1}, {"group_size", group->info.members.size()},
                             {"shard_elements", report.shardSizes[group->myIndex]},
                             {"shard_weight", report.myShardWeight}, {"complete", report.complete}};
        if (uploadMbit > 0)
            round["upload_mbit"] = uploadMbit;
        metrics->write("round", round);
        update([&](PeerSnapshot &s) {
            ++s.session.stepsTakenPart;
            s.lastRoundStatus = "reduced a shard for " + std::to_string(group->info.members.size() - 1) + " peer(s)";
        });
    }
    doneEpoch = global;
    setState(PeerState::Training, idle);
}

void SwarmPeer::Impl::runMonitor()
{
    const std::string idle = opt.monitorReduces ? "monitor: recording metrics, reducing shards, keeping the latest state"
                                                : "monitor: recording metrics, keeping the latest state";
    setState(PeerState::Training, idle);
    afterStateChange();
    long doneEpoch = -1;
    long keptEpoch = trainer->step();
    double lastTry = -1e9;
    while (!stopFlag.load() && !timeUp()) {
        setMyRecord(0, 0.0);
        if (opt.monitorReduces)
            helpNextRound(doneEpoch, idle);
        refreshMonitorState(lastTry, idle);
        if (trainer->step() >= keptEpoch + std::max(1L, opt.monitorStateEvery)) {
            keepMonitorState();
            keptEpoch = trainer->step();
        }
        sleepFor(opt.monitorReduces ? 0.05 : 0.5);
    }
    downstream.reset(); // stops a fine-tuning in progress
}

void SwarmPeer::Impl::refreshMonitorState(double &lastTry, const std::string &idle)
{
    constexpr double RetryAfterSeconds = 2.0;
    long global;
    {
        std::lock_guard lock(mutex);
        global = tracker.global(unixNow()).globalEpoch;
    }
    if (global < trainer->step() + std::max(1L, opt.monitorStateEvery) || unixNow() - lastTry < RetryAfterSeconds)
        return;
    lastTry = unixNow();
    // The updates first: they cost the trainers' uplinks a round's compressed average per epoch
    // instead of a whole state (2-3 fp32 values per parameter).
    const bool replayed = replayUpdates(global);
    setState(PeerState::Training, idle);
    if (replayed && trainer->step() >= global)
        return;
    std::string why;
    if (!downloadAndLoadState(trainer->step() + 1, &why))
        log::info("monitor", "state not refreshed: " + why);
}

void SwarmPeer::Impl::keepMonitorState()
{
    if (!trySave())
        return;
    archiveCheckpoint();
    if (downstream)
        downstream->offer(CheckpointStore(checkpointDir).newestPath(), trainer->step());
}

void SwarmPeer::Impl::startDownstreamEvaluation()
{
    const long every = opt.evaluateEvery > 0 ? opt.evaluateEvery : manifest->evaluation.everyNSteps;
    if (every <= 0)
        return;
    const auto task = opt.evaluationTask.empty() ? defaultEvaluationTask(*manifest)
                                                 : std::optional<std::filesystem::path>(opt.evaluationTask);
    if (!task)
        throw Error("downstream evaluation every " + std::to_string(every) +
                    " steps, but the run names no task: give the task directory");
    try {
        (void)readLabelledTextSet(*task); // a broken task is refused now, not at the first evaluation
    } catch (const Error &e) {
        throw Error(std::string("the downstream evaluation task: ") + e.what());
    }
    DownstreamSchedule schedule{*task, every, {}};
    // The default budget's sentence length, cut to what the run's model can read.
    schedule.options.fineTune.maxTokens = std::min(schedule.options.fineTune.maxTokens, manifest->model.maxPositions);
    auto sink = recorder;
    downstream = std::make_unique<DownstreamMonitor>(*manifest, schedule, checkpointDir / "evaluation",
                                                     [sink](const nlohmann::json &result) {
                                                         sink->recordEvaluation(result);
                                                     });
    log::info("eval", "the monitor fine-tunes the saved state on " + task->string() + " every " +
                          std::to_string(every) + " steps");
}

void SwarmPeer::Impl::archiveCheckpoint()
{
    if (opt.checkpointArchive.empty())
        return;
    try {
        const auto file = CheckpointArchive(opt.checkpointArchive, opt.keepCheckpoints)
                              .add(CheckpointStore(checkpointDir).newestPath(), trainer->step());
        log::info("ckpt", "kept the state of epoch " + std::to_string(trainer->step()) + " as " + file.string());
    } catch (const Error &e) {
        log::error("ckpt", std::string("checkpoint not archived: ") + e.what() + "; the monitor goes on");
    }
}

} // namespace dedloc
