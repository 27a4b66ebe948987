#pragma once
// The run manifest: one JSON document that defines a collaborative training run. Every peer of a
// run must hold the same manifest (its SHA-256 is the run's fingerprint). Format: docs/MANIFEST.md.
//
// Parsing is strict: a missing field, an unknown field or a value of the wrong type or range is
// rejected with dedloc::Error whose message starts with the field's dotted path, e.g.
// "model.hidden_size: expected a positive integer, got \"256\"".
#include "compress/Compression.h"
#include "model/ModelShape.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dedloc {

struct FileRef {
    std::string path;            // relative to the manifest's directory (or absolute)
    std::string sha256;          // 64 lowercase hex digits
};

struct CorpusSpec {
    std::vector<FileRef> files;
    double validationFraction = 0.02; // last fraction of the corpus (by bytes, at a line boundary)
};

struct TrainingSpec {
    int sequenceLength = 128;    // tokens per sequence, [CLS] and [SEP] included
    int targetBatchSize = 0;     // samples (sequences) per optimizer step, summed over the swarm
    int microBatchSize = 0;      // samples per forward/backward pass on one peer
    double maskProbability = 0.15;
    double maxGradNorm = 1.0;    // global L2 norm clip; <= 0 disables
    int validationEveryNSteps = 10;
    int validationSamples = 64;
    int checkpointEveryNSteps = 10;
};

struct OptimizerSpec {
    std::string name = "lamb";   // only LAMB (You et al. 2020, arXiv 1904.00962) for now
    double learningRate = 0.0;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double epsilon = 1e-6;
    double weightDecay = 0.01;
    double clampValue = 10.0;    // upper bound on ||w|| in the trust ratio (LAMB's phi)
    bool debias = true;          // Adam-style bias correction of the moments
};

struct ScheduleSpec {
    int warmupSteps = 0;         // linear 0 -> learning_rate over these optimizer steps
    int totalSteps = 0;          // then linear decay to 0 at this step
};

// Downstream evaluation of the run's checkpoints (eval/DownstreamEvaluation.h): the monitor
// fine-tunes a kept checkpoint on a labelled text set and records accuracy and macro-F1.
// Optional; absent: the monitor evaluates nothing unless its command line says so.
struct EvaluationSpec {
    std::string task;            // directory with train.tsv, test.tsv (dev.tsv, labels.txt),
                                 // relative to the manifest's directory; empty: no evaluation
    int everyNSteps = 0;         // evaluate a kept checkpoint at least this many steps after the
                                 // last evaluated one; >= 1 when `task` is set
};

// How each reducer combines the senders' parts of its shard (averaging/RobustAggregation.h).
enum class AggregationRule {
    Mean,         // the weighted mean: exactly DeDLOC's global-batch gradient
    CenteredClip, // BTARD's CenteredClip (Gorbunov et al. 2021, arXiv 2106.11257, Algorithm 2)
};

struct AggregationSpec {
    AggregationRule rule = AggregationRule::Mean;
    // CenteredClip's radius, as a multiple of the median distance of the senders' parts from
    // their coordinate-wise median (scale-free: gradients shrink as training goes on). >= 1.
    double radius = 2.0;
    // The most a peer's claimed rate counts, as a multiple of the median rate of the live
    // progress records (averaging/ProgressTracker.h TrackerOptions::maxRateOverMedian). >= 1.
    // Unset: OpenRunRateBound in open runs, no bound in closed ones (RunManifest::
    // maxRateOverMedian()). A run whose peers differ widely in speed (GPUs among CPUs) sets it
    // above their ratio, or its fastest peers count at the bound.
    std::optional<double> maxRateOverMedian;
    static constexpr double OpenRunRateBound = 8.0;
};

// What the swarm averages at a global step (docs/PROTOCOL.md "Averaging modes").
enum class AveragingMode {
    // DeDLOC's mode: the global batch's mean gradient, and one LAMB step on it.
    Gradients,
    // Local updates (DiLoCo, Douillard et al. 2023, arXiv 2311.08105, Algorithm 1): each peer
    // takes inner LAMB steps on its own batches of `innerBatchSize` samples; at the global step
    // (the outer step) the swarm averages the pseudo-gradients (parameters at the last outer step
    // minus the local ones, weighted by samples) and applies Nesterov momentum SGD to them.
    LocalUpdates,
};

// How the swarm averages (docs/PROTOCOL.md "Delayed parameter updates", "Averaging modes").
struct AveragingSpec {
    // The averaging round of step t runs beside the micro-batches of step t + 1, which are
    // computed on the parameters before step t's update (one step stale); the update applied
    // is still exactly the group's averaged gradient (hivemind's delay_optimizer_step). In
    // local-update mode: the outer step's round runs beside the next inner steps, whose progress
    // is carried onto the new anchor when it arrives (overlapped DiLoCo, one outer step late).
    bool delayedParameterUpdates = false;
    AveragingMode mode = AveragingMode::Gradients;
    // Local updates only: samples of each inner step (1 to training.target_batch_size), and the
    // outer Nesterov step's learning rate and momentum (DiLoCo's defaults: 0.7 and 0.9).
    int innerBatchSize = 0;
    double outerLearningRate = 0.7;
    double outerMomentum = 0.9;
    // Members an averaging group holds at most (MinGroupSize to MaxGroupSize). A swarm larger than
    // that averages in several groups per step, merged into one step (averaging/GroupMerge.h).
    // A butterfly round costs each member about twice its vector whatever the group's size, but
    // 2 (n - 1) connections and the wait for its slowest member: 64 keeps the parts of the
    // default model's gradient above 30 000 values.
    static constexpr int MinGroupSize = 2;
    static constexpr int MaxGroupSize = 256;
    int groupSize = 64;
};

struct RunManifest {
    int formatVersion = 1;
    std::string runId;           // [A-Za-z0-9._-]{1,64}; DHT keys derive from it
    std::string name;            // shown to volunteers
    std::string lead;            // who runs it
    std::string description;
    ModelShape model;
    FileRef tokenizer;
    CorpusSpec corpus;
    TrainingSpec training;
    OptimizerSpec optimizer;
    ScheduleSpec schedule;
    Compression compression = Compression::Fp16;
    std::vector<std::string> bootstrapPeers; // "host:port"
    // "access": "closed" admits only peers holding an access token signed by the run's lead key
    // (security/AccessToken.h; checked at the data-plane handshake, net/CurveSecurity.h).
    // Optional; absent or "open": anyone may join (links are encrypted either way).
    bool closed = false;
    EvaluationSpec evaluation;
    // "aggregation": {"rule": "mean" | "centered-clip", "radius": r, "max_rate_over_median": x}
    // (radius and the rate bound optional). Optional; absent: `mean`
    // for closed runs (every peer is admitted by the lead) and `centered-clip` for open ones
    // (aggregation() resolves it).
    std::optional<AggregationSpec> aggregationField;

    [[nodiscard]] AggregationSpec aggregation() const;
    // The rate bound its peers count claims with: the aggregation's, else
    // AggregationSpec::OpenRunRateBound in an open run and infinity (no bound) in a closed one.
    [[nodiscard]] double maxRateOverMedian() const;
    // "averaging": {"delayed_parameter_updates": bool} or {"mode": "local_updates",
    // "inner_batch_size": n, "outer_learning_rate": x, "outer_momentum": x}, either with
    // "group_size": n. Optional; absent: AveragingSpec{} (gradients, no delay, groups of 64).
    std::optional<AveragingSpec> averagingField;
    [[nodiscard]] AveragingSpec averaging() const { return averagingField.value_or(AveragingSpec{}); }

    // Directory the relative paths resolve against (not part of the JSON).
    std::filesystem::path baseDir;

    [[nodiscard]] std::filesystem::path resolve(const std::string &relative) const;
};

// Parse and validate. `baseDir` is stored for path resolution. Throws dedloc::Error.
[[nodiscard]] RunManifest parseRunManifest(const std::string &json, const std::filesystem::path &baseDir);
[[nodiscard]] RunManifest loadRunManifest(const std::filesystem::path &file);
// Canonical JSON (sorted keys, 2-space indent) that parseRunManifest accepts.
[[nodiscard]] std::string toJson(const RunManifest &manifest);

// What peers must agree on to average together: the first 16 hex digits of the SHA-256 of
// toJson() less the fields that change no peer's arithmetic (name, lead, description,
// bootstrap_peers, evaluation, and training's validation, checkpoint and micro-batch settings,
// which each peer may choose). A lead who re-signs the run with another target batch, learning
// rate, schedule or model gets another fingerprint; one who only adds a bootstrap peer does not.
// The swarm's DHT keys derive from it (docs/PROTOCOL.md "Manifest versions"). Throws nothing.
[[nodiscard]] std::string trainingFingerprint(const RunManifest &manifest);

// Checks that the tokenizer and every corpus file exist and match their SHA-256. Throws
// dedloc::Error naming the file, the expected and the actual hash.
void verifyRunFiles(const RunManifest &manifest);

} // namespace dedloc
