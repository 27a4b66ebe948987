// SwarmPeer's auxiliary and monitor roles (peer/SwarmPeerImpl.h): an auxiliary reduces shards
// with weight 0; a monitor keeps the latest state (checkpointed and archived) for donors and,
// when it reduces, also helps rounds as an auxiliary does.
#include "peer/SwarmPeerImpl.h"

#include "monitor/CheckpointArchive.h"
#include "eval/LabelledText.h"
#include "run/RunPaths.h"
#include "train/Checkpoint.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

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
        auto o = gradientRoundOptions(global, &group->info);
        o.myWeight = 0.0;
        // A monitor that holds the swarm's state of this epoch keeps what the round applies.
        const bool mayFollow =
            opt.role == PeerRole::Monitor && stateIsSwarms && !repairWanted && trainer->step() == global;
        std::vector<EncodedPiece> captured;
        if (mayFollow)
            o.capture = &captured;
        const auto started = std::chrono::steady_clock::now();
        const auto report = allReduce->run(group->info.groupId, group->info.members, group->myIndex, values, o);
        afterRound(*group, report);
        const double roundSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        const bool followed = // its view of its shard goes out either way (afterRound)
            mayFollow && followRound(*group, report, values, std::move(captured), resultCodec(o.codec), roundSeconds);
        if (stateRoundDue(*group, global))
            (void)averageState(*group, global);
        nlohmann::json round{{"step", global + 1}, {"group_size", group->info.members.size()},
                             {"shard_elements", report.shardSizes[group->myIndex]},
                             {"shard_weight", report.myShardWeight}, {"complete", report.complete}};
        if (mayFollow)
            round["followed"] = followed;
        if (opt.hashParameters && trainer->step() == global + 1) { // as a trainer's step event has it
            const auto p = trainer->sharedParametersFlat();
            round["params_sha"] = sha256Hex(p.data(), p.size() * sizeof(float));
        }
        if (uploadMbit > 0)
            round["upload_mbit"] = uploadMbit;
        addMemoryFields(round);
        metrics->write("round", round);
        update([&](PeerSnapshot &s) {
            ++s.session.stepsTakenPart;
            s.lastRoundStatus = "reduced a shard for " + std::to_string(group->info.members.size() - 1) + " peer(s)";
        });
    }
    doneEpoch = global;
    setState(PeerState::Training, idle);
}

bool SwarmPeer::Impl::followRound(const FormedGroup &group, const AllReduceReport &report,
                                  const std::vector<float> &averaged, std::vector<EncodedPiece> captured,
                                  Compression codec, double roundSeconds)
{
    const long epoch = trainer->step();
    // The batch as the members count it (averaging/CollaborativeStep.cpp: the group's weight).
    const long batch = report.groupWeight > 0.0 && std::isfinite(report.groupWeight)
                           ? static_cast<long>(std::llround(report.groupWeight))
                           : 0;
    // A member of weight 0 sends no PARTs, so no other reducer returns it a RESULT: it holds the
    // average only of its own shard, the whole of it only as the group's one reducer (its
    // trainers all in client mode). Then the pieces tile the vector.
    auto update = report.complete && batch > 0
                      ? assembleUpdate(epoch, batch, codec, averaged.size(), std::move(captured))
                      : std::nullopt;
    if (!update) {
        // Others reducing is the usual case of a swarm with reachable trainers: not worth a line a step.
        const bool othersReduced = report.complete && batch > 0;
        const auto line = "not following epoch " + std::to_string(epoch) + " through round " + group.info.groupId
                          + (othersReduced ? " (other members reduced shards of it)"
                                           : " (incomplete, or no trainer sent a gradient)")
                          + ": it catches up from donors";
        if (othersReduced)
            log::debug("monitor", line);
        else
            log::info("monitor", line);
        return false;
    }
    // As the trainers do: the epoch's other groups, if any, merge into the step (GroupMerge.h).
    const auto own = std::make_shared<const AveragedUpdate>(std::move(*update));
    auto merged =
        merger->merge(group.info, own, [this, epoch] { return expectedPeers(epoch); }, roundSeconds, stopFlag,
                      report.evidence);
    if (!merged.note.empty())
        log::warning("monitor", "merging the epoch's groups: " + merged.note);
    const bool byMerge = merged.average.size() == averaged.size();
    (void)trainer->applyAveragedStep(byMerge ? merged.average : averaged, byMerge ? merged.weight : batch);
    keepUpdate(byMerge ? nullptr : own, !byMerge); // a merged step is no group's round: nothing to replay
    afterStateChange();
    log::info("monitor", "followed the swarm to epoch " + std::to_string(trainer->step()) + " through round "
                             + group.info.groupId + " (applied "
                             + (byMerge ? "the merge of " + std::to_string(merged.groups) + " groups' averages"
                                        : std::string("its averaged gradient"))
                             + " of " + std::to_string(byMerge ? merged.weight : batch) + " samples)");
    return true;
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
