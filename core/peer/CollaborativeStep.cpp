#include "peer/CollaborativeStep.h"

#include "util/Error.h"
#include "util/Log.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace dedloc {

GroupSearch::GroupSearch(Matchmaker &matchmaker, std::string schema, std::function<void(const FormedGroup &)> onFormed)
    : m_matchmaker(matchmaker), m_schema(std::move(schema)), m_onFormed(std::move(onFormed))
{
}

GroupSearch::~GroupSearch() { drop(); }

void GroupSearch::start(long epoch, std::function<std::size_t()> expectedPeers)
{
    drop();
    m_epoch = epoch;
    m_cancel = false;
    m_formed = false;
    m_result = std::async(std::launch::async, [this, epoch, expected = std::move(expectedPeers)] {
        auto group = m_matchmaker.formGroup(epoch, m_schema, expected, m_cancel, &m_why);
        if (group && m_onFormed)
            m_onFormed(*group);
        m_formed = group.has_value();
        return group;
    });
}

void GroupSearch::drop()
{
    if (m_result.valid()) {
        m_cancel = true;
        m_result.wait();
        m_result = {};
        m_cancel = false;
    }
    m_epoch = -1;
}

bool GroupSearch::ended() const
{
    return m_result.valid() && m_result.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

std::optional<FormedGroup> GroupSearch::wait(const std::function<bool()> &giveUp, bool *gaveUp)
{
    if (gaveUp)
        *gaveUp = false;
    if (!m_result.valid())
        return std::nullopt;
    while (m_result.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
        if (!m_cancel && giveUp()) {
            m_cancel = true;
            if (gaveUp)
                *gaveUp = true;
        }
    }
    auto group = m_result.get();
    m_cancel = false;
    m_epoch = -1;
    return group;
}

namespace {

// The round of a step: averages `gradient` (this peer's mean gradient, replaced by the group's
// average) with `out.localSamples` as its weight and fills `out` except `result`. False, with the
// reason in *why and nothing filled, when the group is invalid and no round could run.
// Replaces a complete round's average in `gradient` by the merge of the epoch's groups.
void mergeGroups(const GroupMergeHook &merge, const FormedGroup &group, double roundSeconds,
                 std::vector<float> &gradient, StepOutcome &out)
{
    out.mergedPeers = group.info.members.size();
    if (!merge.merge || !out.update)
        return;
    auto merged = merge.merge(group, out.update, roundSeconds, out.report.evidence);
    if (!merged.note.empty())
        log::warning("swarm", "merging the epoch's groups: " + merged.note);
    if (merged.average.size() != gradient.size())
        return; // the step is the group's own average
    gradient = std::move(merged.average);
    out.batchSamples = merged.weight;
    out.mergedGroups = merged.groups;
    out.mergedPeers = merged.peers;
    out.update.reset(); // the step is no longer the group's round: nothing to replay
    if (merged.ownMerged)
        out.status += "; merged with " + std::to_string(merged.groups - 1) + " other group(s), "
                      + std::to_string(merged.peers) + " peers in all";
    else
        out.status += "; took the merge of " + std::to_string(merged.groups) + " group(s), "
                      + std::to_string(merged.peers) + " peers, sealed without this peer's group";
}

// Without a round of its own: the epoch's merge in `gradient` (GroupMerger::adopt), when the
// hook gives one; `why` says why this peer had no round; `round`: the group whose round could not
// run (its end is recorded), or null.
bool adoptMerge(const GroupMergeHook &merge, long epoch, const std::string &why, std::vector<float> &gradient,
                StepOutcome &out, const GroupInfo *round)
{
    if (!merge.adopt)
        return false;
    auto m = merge.adopt(epoch, gradient.size(), round);
    if (!m.note.empty())
        log::warning("swarm", "taking the epoch's merge: " + m.note);
    if (m.average.size() != gradient.size())
        return false;
    gradient = std::move(m.average);
    out.averaged = true;
    out.complete = true;
    out.batchSamples = m.weight;
    out.mergedGroups = m.groups;
    out.mergedPeers = m.peers;
    out.report = {};
    out.update.reset();
    out.status = "took the merge of " + std::to_string(m.groups) + " group(s), " + std::to_string(m.peers)
                 + " peers, without a round of its own (" + why + ")";
    return true;
}

// After a round that lost part of its results (a member left mid-round: its shard's average
// never came), this peer's gradient is partly its own and differs from its group's other members.
// Where other groups of the epoch completed, the merge they apply replaces it (as a peer without
// a round takes it): the step then holds the swarm's model, without this group's batch.
void takeMergeAfterPartialRound(const GroupMergeHook &merge, const FormedGroup &group, long epoch,
                                std::vector<float> &gradient, StepOutcome &out)
{
    if (!merge.adopt)
        return;
    auto m = merge.adopt(epoch, gradient.size(), &group.info);
    if (!m.note.empty())
        log::warning("swarm", "taking the epoch's merge after an incomplete round: " + m.note);
    if (m.average.size() != gradient.size())
        return; // no other group's average: the partial one stays (the agreement check repairs)
    gradient = std::move(m.average);
    out.batchSamples = m.weight;
    out.mergedGroups = m.groups;
    out.mergedPeers = m.peers;
    out.tookMerge = true;
    out.status += "; took the merge of " + std::to_string(m.groups) + " group(s), " + std::to_string(m.peers)
                  + " peers, instead of this incomplete round";
}

bool averageInGroup(AllReduceEndpoint &allReduce, const FormedGroup &group, std::vector<float> &gradient, long epoch,
                    AllReduceOptions options, const GradientTamper &tamper, const GroupMergeHook &merge,
                    StepOutcome &out, std::string *why)
{
    options.myWeight = static_cast<double>(out.localSamples);
    if (!std::all_of(gradient.begin(), gradient.end(), [](float x) { return std::isfinite(x); })) {
        // As the solo trainer skips such a step: this peer's contribution is dropped (weight 0,
        // no values on the wire), the group still averages the others' gradients.
        log::warning("swarm", "the local gradient is not finite (overflow?): this peer contributes nothing to this step");
        std::fill(gradient.begin(), gradient.end(), 0.0F);
        options.myWeight = 0.0;
        out.localSamples = 0;
    }
    if (tamper && options.myWeight > 0.0)
        tamper(gradient);
    std::vector<EncodedPiece> captured;
    options.capture = &captured;
    const auto started = std::chrono::steady_clock::now();
    try {
        out.report = allReduce.run(group.info.groupId, group.info.members, group.myIndex, gradient, options);
    } catch (const Error &e) {
        // A group no round can run in (a leader's invalid member list): no averaging this step.
        log::warning("swarm", std::string("averaging round not run: ") + e.what());
        *why = std::string("round not run: ") + e.what();
        return false;
    }
    // The group's weight is the samples of the whole batch once every shard arrived.
    out.batchSamples = out.report.groupWeight > 0 ? static_cast<long>(std::llround(out.report.groupWeight))
                                                  : out.localSamples;
    if (out.report.complete)
        if (auto u = assembleUpdate(epoch, out.batchSamples, resultCodec(options.codec), gradient.size(), std::move(captured)))
            out.update = std::make_shared<const AveragedUpdate>(std::move(*u));
    out.averaged = true;
    out.complete = out.report.complete;
    out.groupSize = group.info.members.size();
    out.myIndex = group.myIndex;
    out.shardElements = out.report.shardSizes[group.myIndex];
    out.status = "averaged with " + std::to_string(out.groupSize - 1) + " peer(s)"
                 + (out.report.complete
                        ? ""
                        : " (partial: " + std::to_string(static_cast<int>(out.report.receivedFraction * 100))
                              + "% of results)");
    mergeGroups(merge, group, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                gradient, out);
    if (!out.report.complete)
        takeMergeAfterPartialRound(merge, group, epoch, gradient, out);
    return true;
}

} // namespace

std::optional<StepOutcome> applyCollaborativeStep(Trainer &trainer, AllReduceEndpoint &allReduce,
                                                  const std::optional<FormedGroup> &group, const std::string &whyAlone,
                                                  AllReduceOptions options, bool contribute,
                                                  const GradientTamper &tamper, const GroupMergeHook &merge)
{
    StepOutcome out;
    out.localSamples = contribute ? trainer.accumulatedSamples() : 0;
    std::string why = whyAlone;
    if (group) {
        auto gradient = contribute ? trainer.gradientToAverage()
                                   : std::vector<float>(static_cast<std::size_t>(trainer.parameterCount()), 0.0F);
        if (averageInGroup(allReduce, *group, gradient, trainer.step(), options, tamper, merge, out, &why)) {
            out.result = trainer.applyAveragedStep(gradient, out.batchSamples);
            return out;
        }
        out.localSamples = trainer.accumulatedSamples();
    }
    if (contribute) {
        std::vector<float> merged(static_cast<std::size_t>(trainer.parameterCount()));
        if (adoptMerge(merge, trainer.step(), why, merged, out, group ? &group->info : nullptr)) {
            out.result = trainer.applyAveragedStep(merged, out.batchSamples);
            return out;
        }
    }
    if (out.localSamples == 0)
        return std::nullopt; // (a non-finite local gradient is skipped by applyStep itself)
    out.result = trainer.applyStep();
    out.batchSamples = out.localSamples;
    out.status = "fell back to local gradients: " + why;
    return out;
}

std::optional<StepOutcome> averageDetachedGradient(AllReduceEndpoint &allReduce,
                                                   const std::optional<FormedGroup> &group,
                                                   const std::string &whyAlone, DetachedGradient &detached,
                                                   AllReduceOptions options, const GradientTamper &tamper,
                                                   const GroupMergeHook &merge)
{
    StepOutcome out;
    out.localSamples = detached.samples;
    std::string why = whyAlone;
    if (group) {
        const auto own = detached.meanGradient;
        if (averageInGroup(allReduce, *group, detached.meanGradient, detached.epoch, options, tamper, merge, out, &why))
            return out;
        detached.meanGradient = own;
        out.localSamples = detached.samples;
    }
    if (adoptMerge(merge, detached.epoch, why, detached.meanGradient, out, group ? &group->info : nullptr))
        return out;
    if (out.localSamples == 0)
        return std::nullopt;
    out.batchSamples = out.localSamples;
    out.status = "fell back to local gradients: " + why;
    return out;
}

void finishDetachedStep(Trainer &trainer, const DetachedGradient &detached, StepOutcome &outcome)
{
    outcome.result = trainer.applyDetachedStep(detached, detached.meanGradient, outcome.batchSamples);
}

} // namespace dedloc
