#pragma once
// The collaborative optimizer step (DeDLOC section 3; docs/ARCHITECTURE.md "One global step"),
// composed of the averaging units the way hivemind's optimizer composes its progress tracker,
// gradient averager and state averager:
//   progress     the peer's ProgressTracker (averaging/ProgressTracker.h) says that the swarm's
//                samples reached the target batch size: the step is due;
//   matchmaking  a GroupSearch, started shortly before the step, looks for a group of this epoch
//                on a background thread (averaging/Matchmaker.h);
//   averaging    the butterfly all-reduce of this peer's mean gradient, weighted by the samples it
//                accumulated (averaging/ButterflyAllReduce.h):
//                    g = sum_i n_i g_i / sum_i n_i     (n_i samples of peer i, g_i its mean gradient)
//   merging      when the epoch averaged in several groups, the weighted mean of every group's
//                average (averaging/GroupMerge.h): one step for the whole swarm;
//   apply        LAMB on g for a global batch of sum_i n_i samples (train/Trainer.h
//                applyAveragedStep), or on the local gradient when no group formed.
// Threads: GroupSearch runs Matchmaker::formGroup on one background thread; every other call
// belongs to the thread that owns the trainer (the peer's worker). Errors: dedloc::Error from
// the trainer (gradient size) and the all-reduce (invalid group); network faults end up in the
// AllReduceReport, never in an exception.
#include "averaging/ButterflyAllReduce.h"
#include "averaging/GroupMerge.h"
#include "averaging/Matchmaker.h"
#include "train/Trainer.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <future>
#include <optional>
#include <span>
#include <string>

namespace dedloc {

// Background matchmaking for one epoch.
class GroupSearch final {
public:
    // `matchmaker` must outlive the search; `schema`: the averaged tensors' layout digest.
    // `onFormed`, when set, is called on the search thread with each group as soon as it forms
    // (GroupMerger::announce: the epoch's other groups learn early that it exists).
    GroupSearch(Matchmaker &matchmaker, std::string schema, std::function<void(const FormedGroup &)> onFormed = {});
    ~GroupSearch(); // cancels and waits
    GroupSearch(const GroupSearch &) = delete;
    GroupSearch &operator=(const GroupSearch &) = delete;

    // Looks for a group of `epoch` (a search already running is dropped first).
    // `expectedPeers` (asked from the background thread): peers that will average at `epoch`.
    void start(long epoch, std::function<std::size_t()> expectedPeers);
    // Cancels the search and waits for its thread (at most one matchmaking request timeout).
    void drop();
    [[nodiscard]] bool active() const { return m_result.valid(); }
    // Whether the running search has ended (with or without a group): wait() returns at once.
    [[nodiscard]] bool ended() const;
    // Whether the running search has ended with a group (its members wait for this peer).
    [[nodiscard]] bool formed() const { return ended() && m_formed.load(); }
    [[nodiscard]] long epoch() const { return m_epoch; } // -1: none running
    // Waits for the result, asking `giveUp` every 50 ms; once it says yes the search is cancelled
    // and *gaveUp set. Returns the group, or nothing with the reason in why(). Ends the search.
    std::optional<FormedGroup> wait(const std::function<bool()> &giveUp, bool *gaveUp = nullptr);
    // Why the last search formed no group ("" before any).
    [[nodiscard]] const std::string &why() const { return m_why; }

private:
    Matchmaker &m_matchmaker;
    std::string m_schema;
    std::function<void(const FormedGroup &)> m_onFormed;
    std::future<std::optional<FormedGroup>> m_result;
    std::atomic<bool> m_cancel{false};
    std::atomic<bool> m_formed{false}; // set by the search thread before it returns a group
    long m_epoch = -1;
    std::string m_why; // written by the search thread, read after its future is ready
};

// What one global step did.
struct StepOutcome {
    StepResult result;             // the applied step (result.applied false: non-finite, skipped)
    bool averaged = false;         // the gradient was averaged in a group
    bool complete = false;         // ... and every shard's average arrived
    long localSamples = 0;         // samples this peer computed for the step
    long batchSamples = 0;         // samples of the step's batch: the group's weight, or local
    std::size_t groupSize = 1;
    std::size_t mergedGroups = 1;  // groups whose averages make up the step (GroupMerge.h)
    std::size_t mergedPeers = 0;   // their members (0: not averaged)
    bool tookMerge = false;        // applied the epoch's merge instead of an incomplete round's
                                   // partial average: the parameters are the merging peers'
    std::size_t myIndex = 0;       // in the group
    std::int64_t shardElements = 0;// elements this peer reduced
    std::string status;            // "averaged with 2 peer(s)", "fell back to local gradients: ..."
    AllReduceReport report;        // of the averaging round (averaged steps only)
    // A complete round's average as encoded on the wire, taken at the epoch before the step: what
    // a peer holding this epoch's state replays to get the next (averaging/AveragedUpdate.h).
    std::shared_ptr<const AveragedUpdate> update;
};

using GradientTamper = std::function<void(std::span<float>)>;
// The second averaging level (averaging/GroupMerge.h); unset members: none.
struct GroupMergeHook {
    // Given the group and its complete round's average (and the round's seconds, and what it kept
    // for the result check: AllReduceReport::evidence), the merge of every group of the epoch
    // (GroupMerger::merge).
    std::function<MergeResult(const FormedGroup &group, const std::shared_ptr<const AveragedUpdate> &own,
                              double roundSeconds, const std::shared_ptr<const RoundEvidence> &evidence)>
        merge;
    // For a step without a complete round of its own (no group formed for it, its round could
    // not run, or lost a part): the merge the epoch's groups apply, of `elements` values
    // (GroupMerger::adopt); `round` the group of the incomplete round (nullptr: none).
    std::function<MergeResult(long epoch, std::size_t elements, const GroupInfo *round)> adopt;
};

// Averages this peer's gradient in `group` and applies the step; without a group (or a round)
// takes the epoch's merge when `merge.adopt` gives one, else applies the local gradient
// (`whyAlone` goes into the status). Returns nothing, and changes nothing, when
// there is neither a group nor a local sample (a peer that just downloaded the state).
// `contribute` false (a peer pausing in a group it has joined): it takes part with weight 0, no
// values on the wire (its own samples are dropped), so the others need not wait for it, and applies the
// group's average like everyone; without a group it does nothing.
// `tamper`, when set, rewrites this peer's mean gradient before it is sent: what a hostile peer
// does (tests only, tests/hostile/HostilePeer.cpp; the apps never set one). `merge`, when set,
// replaces a complete round's average by the merge of the epoch's groups (the step is then not
// kept for replay: StepOutcome::update stays empty).
[[nodiscard]] std::optional<StepOutcome> applyCollaborativeStep(Trainer &trainer, AllReduceEndpoint &allReduce,
                                                                const std::optional<FormedGroup> &group,
                                                                const std::string &whyAlone,
                                                                AllReduceOptions options, bool contribute = true,
                                                                const GradientTamper &tamper = {},
                                                                const GroupMergeHook &merge = {});

// Delayed parameter updates (docs/PROTOCOL.md "Delayed parameter updates"): the averaging half of
// applyCollaborativeStep on a gradient already taken out of the trainer (Trainer::detachGradient),
// so that it can run on another thread while the trainer computes the next step's micro-batches;
// it never touches the trainer. On return `detached.meanGradient` holds what to apply: the
// group's average, or this peer's own mean gradient when no group formed (`whyAlone`) or no round
// could run. The outcome's `result` is left empty: finishDetachedStep applies it. Returns nothing
// when there is neither a group nor a local sample. Threads: any one thread at a time.
[[nodiscard]] std::optional<StepOutcome> averageDetachedGradient(AllReduceEndpoint &allReduce,
                                                                 const std::optional<FormedGroup> &group,
                                                                 const std::string &whyAlone,
                                                                 DetachedGradient &detached, AllReduceOptions options,
                                                                 const GradientTamper &tamper = {},
                                                                 const GroupMergeHook &merge = {});
// Applies what averageDetachedGradient left in `detached` for `outcome.batchSamples` samples
// (Trainer::applyDetachedStep) and stores the step in `outcome.result`. The trainer's thread.
void finishDetachedStep(Trainer &trainer, const DetachedGradient &detached, StepOutcome &outcome);

} // namespace dedloc
