#pragma once
// The trainer's private state (train/Trainer.h is torch-free; this header is not): shared by
// train/Trainer.cpp (accumulation and steps) and train/TrainerState.cpp (checkpoints and the
// shareable state). Include nowhere else.
#include "train/Trainer.h"

#include "model/Albert.h"
#include "model/DataPipeline.h"
#include "model/Masking.h"
#include "model/Tokenizer.h"
#include "train/CudaAutocast.h"
#include "train/FlatTensors.h"
#include "train/Lamb.h"
#include "train/OuterOptimizer.h"
#include "train/Schedule.h"
#include "util/Error.h"
#include "util/Log.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

namespace dedloc {

namespace trainer_detail {

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

inline std::vector<std::filesystem::path> corpusPaths(const RunManifest &manifest)
{
    std::vector<std::filesystem::path> out;
    for (const auto &f : manifest.corpus.files)
        out.push_back(manifest.resolve(f.path));
    return out;
}

inline nlohmann::json shapeJson(const ModelShape &s)
{
    return {{"vocab_size", s.vocabSize}, {"embedding_size", s.embeddingSize}, {"hidden_size", s.hiddenSize},
            {"num_layers", s.numLayers}, {"num_heads", s.numHeads}, {"intermediate_size", s.intermediateSize},
            {"max_positions", s.maxPositions}};
}

constexpr std::uint64_t ValidationMaskSeed = 0x5EED5EEDULL;


} // namespace trainer_detail

struct Trainer::Impl {
    RunManifest manifest;
    TrainerConfig config;
    torch::Device device{torch::kCPU};
    DataPipeline data;
    DynamicMasker masker;
    AlbertMlm model{nullptr};
    std::vector<std::string> parameterNames;
    std::unique_ptr<Lamb> optimizer;
    LinearWarmupDecay schedule;
    int microBatch;

    long accumulated = 0;
    double accumulatedLossTimesSamples = 0.0;
    trainer_detail::Clock::time_point accumulationStart{};
    // Data position and masking RNG at the last step boundary: what a checkpoint records, so a
    // resumed run redoes an interrupted accumulation exactly.
    DataPosition boundaryPosition;
    std::string boundaryMaskerState;
    std::vector<float> restoredFeedbackResidual; // read by restoreCheckpoint, taken once
    ContributionTotals contribution;
    // Where the data stood when a gradient was detached (delayed parameter updates): the
    // boundary of its step, which a checkpoint records once the step is applied.
    struct Boundary {
        long epoch = 0;
        DataPosition position;
        std::string maskerState;
    };
    std::optional<Boundary> detached;
    // Local-update mode (AveragingMode::LocalUpdates): the outer optimizer, the samples of each
    // inner step, those accumulated toward the next one, and the epoch (outer steps taken).
    std::optional<OuterOptimizer> outer;
    std::vector<torch::Tensor> detachedParameters; // w when the pseudo-gradient was detached
    int innerBatch = 0;
    long innerAccumulated = 0;
    long outerSteps = 0;

    Impl(const RunManifest &m, const Tokenizer &tokenizer, const TrainerConfig &c)
        : manifest(m), config(c),
          data(tokenizer, trainer_detail::corpusPaths(m), m.corpus.validationFraction, m.training.sequenceLength, c.seed),
          masker(m.model.vocabSize, m.training.maskProbability, splitMix64(c.seed ^ 0xA5A5A5A5ULL)),
          microBatch(c.microBatchSize > 0 ? c.microBatchSize : m.training.microBatchSize)
    {
        if (tokenizer.vocabSize() != m.model.vocabSize)
            throw Error("model.vocab_size is " + std::to_string(m.model.vocabSize) + " but the tokenizer has "
                        + std::to_string(tokenizer.vocabSize()) + " tokens");
        if (c.devices.empty() && c.allowCuda && torch::cuda::is_available())
            device = torch::Device(torch::kCUDA, 0);
        // Same seed on every peer: identical initial parameters, so a swarm starts in sync.
        std::uint64_t runHash = 0xcbf29ce484222325ULL; // FNV-1a: std::hash differs between builds
        for (unsigned char ch : m.runId)
            runHash = (runHash ^ ch) * 0x100000001b3ULL;
        torch::manual_seed(splitMix64(runHash) & 0x7FFFFFFFFFFFULL);
        model = AlbertMlm(m.model);
        model->to(device);
        std::vector<torch::Tensor> params;
        std::vector<bool> decay;
        for (const auto &p : model->named_parameters()) {
            parameterNames.push_back(p.key());
            params.push_back(p.value());
            decay.push_back(p.key().find("norm") == std::string::npos && !p.key().ends_with("bias"));
        }
        optimizer = std::make_unique<Lamb>(params, decay, m.optimizer);
        schedule = {m.optimizer.learningRate, m.schedule.warmupSteps, m.schedule.totalSteps};
        if (const auto a = m.averaging(); a.mode == AveragingMode::LocalUpdates) {
            innerBatch = a.innerBatchSize;
            outer.emplace(params, a.outerLearningRate, a.outerMomentum);
        }
        boundaryMaskerState = masker.state();
        log::info("train", "model " + m.model.preset + ": " + std::to_string(model->parameterCount())
                               + " parameters on " + device.str());
    }

    std::pair<torch::Tensor, torch::Tensor> toTensors(MaskedBatch &batch, int samples)
    {
        const auto T = static_cast<std::int64_t>(manifest.training.sequenceLength);
        auto ids = torch::from_blob(batch.inputIds.data(), {samples, T}, torch::kInt).to(torch::kLong);
        auto labels = torch::from_blob(batch.labels.data(), {samples, T}, torch::kLong).clone();
        return {ids.to(device), labels.to(device)};
    }

    // perSample: [B] per-sequence mean losses (training); else the token mean (validation).
    // `m` is the model or a replica; the device is that of `ids`.
    static torch::Tensor lossOf(AlbertMlm &m, const torch::Tensor &ids, const torch::Tensor &labels, bool perSample)
    {
        auto compute = [&] { return perSample ? m->mlmSampleLosses(ids, labels) : m->mlmLoss(ids, labels); };
        const CudaAutocast autocast(ids.is_cuda()); // bf16 on the GPU; per thread
        return compute();
    }

    torch::Tensor loss(const torch::Tensor &ids, const torch::Tensor &labels, bool perSample = false)
    {
        return lossOf(model, ids, labels, perSample);
    }

    // Multi-device training (train/TrainerDevices.cpp). The replicas compute their share of each
    // micro-batch; their parameters are copied from the model's before every micro-batch.
    std::vector<torch::Device> replicaDevices;
    std::vector<AlbertMlm> replicas;
    // Moves the parameters, their accumulated gradients, LAMB's and the outer optimizer's state
    // and any detached parameters to `target`.
    void moveTo(const torch::Device &target);
    // Builds (or drops) the replicas for `devices` (those after the first).
    void setReplicas(const std::vector<torch::Device> &devices);
    // The sum over the micro-batch's samples of each one's mean masked-token loss, with its
    // gradient added into the parameters' .grad(): on `device` alone, or split evenly by samples
    // among it and the replicas (the gradient of a sum is the sum of the parts' gradients).
    // `devicesUsed`: how many computed a share.
    double backwardLossSum(const torch::Tensor &ids, const torch::Tensor &labels, int &devicesUsed);

    // Sets every parameter's gradient from a flat vector in registration order (size checked).
    void setGradients(std::span<const float> flat)
    {
        std::vector<torch::Tensor> grads;
        for (auto &p : model->parameters()) {
            if (!p.grad().defined())
                p.mutable_grad() = torch::zeros_like(p);
            grads.push_back(p.grad());
        }
        copyFlatInto(flat, grads, "averaged gradient");
    }

    // The epoch: optimizer steps applied, or outer steps in local-update mode.
    [[nodiscard]] long epoch() const { return outer ? outerSteps : optimizer->stepCount(); }

    // Clips the gradients to training.max_grad_norm; returns the norm before clipping.
    double clipGradients()
    {
        const double maxNorm = manifest.training.maxGradNorm;
        return torch::nn::utils::clip_grad_norm_(model->parameters(),
                                                 maxNorm > 0 ? maxNorm : std::numeric_limits<double>::infinity());
    }

    static std::string skipped(const StepResult &r, const char *what)
    {
        std::ostringstream why;
        why << "non-finite " << (std::isfinite(r.loss) ? what : "loss") << " (loss " << r.loss << ", " << what
            << " norm " << r.gradNorm << "): step skipped, parameters unchanged";
        return why.str();
    }

    // Clips the gradients, checks them and r.loss, and applies LAMB at the schedule's rate for
    // the next epoch: fills r.gradNorm, learningRate, applied, skipReason and step.
    void optimizerStep(StepResult &r, bool tookPart)
    {
        r.gradNorm = clipGradients();
        r.learningRate = schedule.at(optimizer->stepCount() + 1);
        if (!std::isfinite(r.gradNorm) || !std::isfinite(r.loss)) {
            r.skipReason = skipped(r, "gradient");
            log::warning("train", r.skipReason);
        } else {
            optimizer->step(r.learningRate);
            r.applied = true;
            if (tookPart)
                ++contribution.stepsTakenPart;
        }
        r.step = optimizer->stepCount();
    }

    // Local updates: one inner LAMB step on the mean gradient of the samples accumulated since
    // the last one, at the schedule's rate of the outer step being built (so that every peer,
    // fast or slow, uses the same rate), then clears the gradients. A non-finite gradient is
    // skipped with a warning. Nothing when no sample is waiting.
    void innerStep()
    {
        if (innerAccumulated == 0)
            return;
        {
            torch::NoGradGuard noGrad;
            const double scale = 1.0 / static_cast<double>(innerAccumulated);
            for (auto &p : model->parameters())
                if (p.grad().defined())
                    p.grad().mul_(scale);
        }
        const double norm = clipGradients();
        if (std::isfinite(norm))
            optimizer->step(schedule.at(outerSteps + 1));
        else
            log::warning("train", "non-finite gradient in an inner step: skipped");
        zeroGradients();
        innerAccumulated = 0;
    }

    // Local updates: the outer step with the (averaged) pseudo-gradient `delta`; fills r as
    // optimizerStep() does (gradNorm: the pseudo-gradient's L2 norm). A non-finite `delta` or
    // loss skips the step and sets the parameters back to the anchor.
    void outerStep(StepResult &r, std::span<const float> delta, bool tookPart)
    {
        double squares = 0.0;
        for (float x : delta)
            squares += static_cast<double>(x) * static_cast<double>(x);
        r.gradNorm = std::sqrt(squares);
        r.learningRate = schedule.at(outerSteps + 1);
        if (!std::isfinite(r.gradNorm) || !std::isfinite(r.loss)) {
            r.skipReason = skipped(r, "pseudo-gradient");
            log::warning("train", r.skipReason);
            outer->resetToAnchor();
        } else {
            outer->step(delta);
            ++outerSteps;
            r.applied = true;
            if (tookPart)
                ++contribution.stepsTakenPart;
        }
        r.step = outerSteps;
    }

    void zeroGradients()
    {
        for (auto &p : model->parameters())
            if (p.grad().defined())
                p.grad().zero_();
    }

    void clearGradients()
    {
        zeroGradients();
        accumulated = 0;
        accumulatedLossTimesSamples = 0.0;
        innerAccumulated = 0;
    }

    // Drops the local accumulation and any detached gradient's boundary (a state was loaded).
    void resetAccumulation()
    {
        clearGradients();
        detached.reset();
        detachedParameters.clear();
    }
};

} // namespace dedloc
