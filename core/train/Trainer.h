#pragma once
// The local trainer: masked-LM micro-batches, gradient accumulation up to the target batch size,
// LAMB with a linear warm-up/decay schedule, gradient clipping, a non-finite guard, checkpoints.
// This header is torch-free (pimpl) so that apps and the UI never compile libtorch.
//
// Accumulation semantics (DeDLOC section 3.1, the global batch): each sample's loss is the mean masked-LM
// loss over its own masked positions; a micro-batch back-propagates the SUM of its samples'
// losses, and applyStep() divides by the samples accumulated. The gradient is the mean over the
// batch's samples, whatever the micro-batches were (the swarm cuts the last one to fit the step,
// averaging/ProgressPacing.h fitMicroBatch) and however the samples were shared among peers: the
// swarm's sample-weighted all-reduce gives the same mean.
//
// Local-update mode (the manifest's "averaging": {"mode": "local_updates"}; DiLoCo, arXiv
// 2311.08105): every averaging.inner_batch_size samples the trainer takes an inner LAMB step on
// its own; the step (the epoch, the global batch) is the outer step (train/OuterOptimizer.h), on
// the pseudo-gradient instead of the mean gradient. applyStep() and applyAveragedStep() take it.
//
// Threads: a Trainer is used from one thread (the trainer thread). Not copyable.
// Errors: dedloc::Error for bad input (corpus, tokenizer/manifest mismatch, checkpoints).
#include "face/Contribution.h"
#include "run/RunManifest.h"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dedloc {

class Tokenizer;

struct TrainerConfig {
    std::uint64_t seed = 0;        // data order and masking; peers use different seeds
    bool allowCuda = true;         // train on CUDA when libtorch has it and a GPU is present
    int microBatchSize = 0;        // 0: the manifest's training.micro_batch_size
    // Where to train from the start, as setDevices() takes them (the model is built on the CPU
    // and moved there, so an excluded GPU never gets a CUDA context). Empty: cuda:0 when
    // allowCuda and CUDA is there, else the CPU.
    std::vector<std::string> devices;
};

struct MicroBatchResult {
    int samples = 0;
    double loss = 0.0;             // mean over the samples of each one's mean masked-token loss (nats)
    double seconds = 0.0;          // wall time of forward + backward
    int devices = 1;               // devices that computed a share (setDevices; fewer when samples were fewer)
};

struct StepResult {
    long step = 0;                 // optimizer steps applied after this call (the epoch)
    long samples = 0;              // samples in this step's batch
    double loss = 0.0;             // mean over the batch's samples of their losses (nats)
    double learningRate = 0.0;
    double gradNorm = 0.0;         // global L2 norm before clipping
    bool applied = false;          // false: skipped (non-finite gradient) or interrupted
    std::string skipReason;
    double seconds = 0.0;          // wall time from the first micro-batch to the step's end
    double samplesPerSecond = 0.0;
};

// A finished accumulation taken out of the trainer (delayed parameter updates): its mean
// gradient is averaged elsewhere while the trainer accumulates the next step's micro-batches on
// the parameters it still has, one step stale once this one is applied.
struct DetachedGradient {
    std::vector<float> meanGradient; // as meanGradientFlat(): parameterCount() elements
    long samples = 0;                // samples it was accumulated over
    double loss = 0.0;               // mean over those samples of their losses (nats)
    double seconds = 0.0;            // wall time from its first micro-batch to the detach
    long epoch = 0;                  // step() when detached: it is applied as step epoch + 1
};

class Trainer final {
public:
    // Loads data (the manifest's corpus) and builds the model. Checks that the tokenizer's
    // vocabulary matches model.vocab_size.
    Trainer(const RunManifest &manifest, const Tokenizer &tokenizer, const TrainerConfig &config);
    ~Trainer();
    Trainer(const Trainer &) = delete;
    Trainer &operator=(const Trainer &) = delete;

    // One forward/backward pass over min(maxSamples, micro-batch size) samples (in local-update
    // mode also at most what the inner batch lacks; the inner step follows when it is full).
    MicroBatchResult accumulateMicroBatch(int maxSamples);
    [[nodiscard]] long accumulatedSamples() const;
    // Caps the micro-batch (volunteer setting); clamped to [1, the manifest's micro-batch size].
    void setMicroBatchSize(int samples);
    [[nodiscard]] int microBatchSize() const; // samples per full micro-batch now
    // Divides the accumulated gradient by the sample count, clips, checks it is finite, applies
    // LAMB with the schedule's rate for the new epoch, clears the gradient.
    StepResult applyStep();

    // For the swarm: this peer's mean gradient (accumulated sum / accumulated samples; zeros
    // before any micro-batch), flattened over parameters in registration order (fp32, CPU,
    // parameterCount() elements). The all-reduce averages these weighted by samples.
    [[nodiscard]] std::vector<float> meanGradientFlat() const;
    // What this peer averages at the global step, in meanGradientFlat()'s layout: its mean
    // gradient, or in local-update mode its pseudo-gradient (OuterOptimizer.h; a partial inner
    // batch takes its inner step first).
    [[nodiscard]] std::vector<float> gradientToAverage();
    // Applies an averaged mean gradient (same layout) for a global batch of `batchSamples`:
    // clipping, the non-finite guard, LAMB and the schedule exactly as applyStep(). Clears the
    // local accumulation. Throws dedloc::Error if the size differs from parameterCount().
    // Local-update mode: the outer step with the averaged pseudo-gradient instead.
    StepResult applyAveragedStep(std::span<const float> meanGradient, long batchSamples);
    // Delayed parameter updates (hivemind's delay_optimizer_step; docs/PROTOCOL.md "Delayed
    // parameter updates"): takes the accumulated mean gradient out and starts a new, empty
    // accumulation at once. The step is still to be applied: step() does not change.
    // Local-update mode: the pseudo-gradient instead (a partial inner batch takes its step
    // first); the inner steps go on from the local parameters.
    DetachedGradient detachGradient();
    // Applies `gradient` (the detached one averaged with the group's, or its own mean when no
    // group formed) for a batch of `batchSamples`: clipping, the non-finite guard, LAMB and the
    // schedule exactly as applyAveragedStep(), with the loss and time of `detached`. The micro-
    // batches accumulated since the detach stay accumulated (for the next step). Throws
    // dedloc::Error when `detached` is not this trainer's last detach at its epoch (a state was
    // loaded or a step applied since) or the size differs from parameterCount().
    // Local-update mode: the outer step with `gradient` (the averaged pseudo-gradient) moves the
    // anchor, and the inner progress made since the detach is carried over onto it:
    // w <- theta_next + (w - w_detach).
    StepResult applyDetachedStep(const DetachedGradient &detached, std::span<const float> gradient,
                                 long batchSamples);
    // accumulateMicroBatch() until target_batch_size samples, then applyStep(). If *stop becomes
    // true between micro-batches, returns with applied == false and the partial gradient dropped.
    StepResult trainStep(const std::atomic<bool> *stop = nullptr);

    // Mean masked-LM loss on the held-out sequences (fixed masks, so values are comparable).
    [[nodiscard]] double validationLoss();

    [[nodiscard]] long step() const;
    [[nodiscard]] long long parameterCount() const;
    [[nodiscard]] std::string deviceName() const; // "cpu", "cuda:0", "cuda:0+cuda:1"

    // The devices micro-batches run on, as torch names them ("cpu", "cuda:1"). The first holds
    // the parameters, the accumulated gradient and the optimizers' state; each further one holds
    // a replica that computes an even share of every micro-batch (split by samples), whose
    // gradient is added into the first's, so the step is the same as on one device up to
    // float rounding. Empty: the CPU. A change moves the state and keeps the accumulation;
    // call it between micro-batches, on the thread that trains. Throws dedloc::Error for a name
    // torch does not parse, a device other than CPU and CUDA, a CUDA device this process does not
    // see, or a CUDA device named twice (nothing changes then). The CPU may be named more than
    // once: each share then runs on its own thread (how tests check the split).
    void setDevices(const std::vector<std::string> &devices);
    [[nodiscard]] std::vector<std::string> devices() const;
    [[nodiscard]] ContributionTotals contribution() const; // ever (checkpointed)
    [[nodiscard]] const RunManifest &manifest() const;

    // Checkpoints hold parameters (local-update mode: the anchor, and the outer momentum as
    // "outer.momentum.<i>"), LAMB statistics, the step, the data position and masking RNG
    // at the last step boundary, and the contribution counters. save() throws dedloc::Error on
    // I/O failure and leaves earlier checkpoints intact. restore() loads the newest good one
    // (falling back to the previous one, with a log line) and returns its step, or nothing if
    // there is none; a checkpoint of another run or model shape is refused.
    // `feedbackResidual`: the error-feedback residual of this peer's pseudo-gradients
    // (compress/ErrorFeedback.h; empty, or parameterCount() elements), kept as the 1-D tensor
    // "feedback.residual" after the others, so that a restarted peer still sends what its codec
    // held back. restore() keeps the one it read (if its size fits; a checkpoint with a residual
    // of another size is refused) for takeRestoredFeedbackResidual().
    void saveCheckpoint(const std::filesystem::path &directory, std::span<const float> feedbackResidual = {});
    std::optional<long> restoreCheckpoint(const std::filesystem::path &directory);
    // The residual the last restoreCheckpoint() read, once (empty if it held none).
    [[nodiscard]] std::vector<float> takeRestoredFeedbackResidual();

    // Flattened parameters (fp32, CPU) for tests and state comparison.
    [[nodiscard]] std::vector<float> parametersFlat() const;
    // The parameters every member of a group holds alike after a step, same layout:
    // parametersFlat(), or in local-update mode the anchor (the local parameters move on).
    [[nodiscard]] std::vector<float> sharedParametersFlat() const;

    // The shareable training state for DeDLOC state sharing and state averaging (docs/PROTOCOL.md
    // "State sharing"): the parameters in registration order, then the LAMB statistics in
    // Lamb::state() order (exp_avg and exp_avg_sq of each parameter in turn); fp32, CPU,
    // stateElements() = 3 * parameterCount() elements. Local-update mode: the anchor, then the
    // outer momentum (2 * parameterCount()): what every member holds alike after an outer step;
    // the inner LAMB statistics are each peer's own (DiLoCo) and a loaded state keeps them.
    [[nodiscard]] long long stateElements() const;
    [[nodiscard]] std::vector<float> stateFlat() const;
    // Loads such a vector and sets the epoch (optimizer step; the schedule follows it). Drops any
    // local accumulation and any detached gradient. Throws dedloc::Error on a size mismatch or a
    // non-finite element (the model is unchanged then).
    void loadStateFlat(std::span<const float> state, long epoch);
    // Continues accumulation with the data stream (order and masks) of a fresh trainer with
    // `seed`, from its start. Lets one trainer replay the split batch of several peers, which is
    // how the swarm's equivalence with single-peer training is checked.
    void restartData(std::uint64_t seed);

private:
    // The step's end: LAMB on the gradients set (gradients mode) or the outer step with
    // `pseudoGradient` (local-update mode); then the accumulation clears and the boundary moves.
    StepResult finishStep(StepResult partial, std::span<const float> pseudoGradient = {});
    StepResult applyDetachedOuterStep(const DetachedGradient &detached, std::span<const float> pseudoGradient,
                                      long batchSamples);

    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace dedloc
