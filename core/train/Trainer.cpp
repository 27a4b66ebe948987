#include "train/Trainer.h"

#include "model/Albert.h"
#include "model/DataPipeline.h"
#include "model/Masking.h"
#include "model/Tokenizer.h"
#include "train/Checkpoint.h"
#include "train/Lamb.h"
#include "train/Schedule.h"
#include "util/Error.h"
#include "util/Log.h"

#include <ATen/autocast_mode.h>

#include <chrono>
#include <cmath>
#include <sstream>

namespace dedloc {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<std::filesystem::path> corpusPaths(const RunManifest &manifest)
{
    std::vector<std::filesystem::path> out;
    for (const auto &f : manifest.corpus.files)
        out.push_back(manifest.resolve(f.path));
    return out;
}

nlohmann::json shapeJson(const ModelShape &s)
{
    return {{"vocab_size", s.vocabSize}, {"embedding_size", s.embeddingSize}, {"hidden_size", s.hiddenSize},
            {"num_layers", s.numLayers}, {"num_heads", s.numHeads}, {"intermediate_size", s.intermediateSize},
            {"max_positions", s.maxPositions}};
}

constexpr std::uint64_t ValidationMaskSeed = 0x5EED5EEDULL;

// The tensors' elements in turn, as fp32 on the CPU.
std::vector<float> flatten(const std::vector<torch::Tensor> &tensors)
{
    std::vector<torch::Tensor> flat;
    for (const auto &t : tensors)
        flat.push_back(t.detach().to(torch::kCPU, torch::kFloat).reshape({-1}));
    auto all = torch::cat(flat);
    return {all.data_ptr<float>(), all.data_ptr<float>() + all.numel()};
}

} // namespace

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
    Clock::time_point accumulationStart{};
    // Data position and masking RNG at the last step boundary: what a checkpoint records, so a
    // resumed run redoes an interrupted accumulation exactly.
    DataPosition boundaryPosition;
    std::string boundaryMaskerState;
    ContributionTotals contribution;
    // Where the data stood when a gradient was detached (delayed parameter updates): the
    // boundary of its step, which a checkpoint records once the step is applied.
    struct Boundary {
        long epoch = 0;
        DataPosition position;
        std::string maskerState;
    };
    std::optional<Boundary> detached;

    Impl(const RunManifest &m, const Tokenizer &tokenizer, const TrainerConfig &c)
        : manifest(m), config(c),
          data(tokenizer, corpusPaths(m), m.corpus.validationFraction, m.training.sequenceLength, c.seed),
          masker(m.model.vocabSize, m.training.maskProbability, splitMix64(c.seed ^ 0xA5A5A5A5ULL)),
          microBatch(c.microBatchSize > 0 ? c.microBatchSize : m.training.microBatchSize)
    {
        if (tokenizer.vocabSize() != m.model.vocabSize)
            throw Error("model.vocab_size is " + std::to_string(m.model.vocabSize) + " but the tokenizer has "
                        + std::to_string(tokenizer.vocabSize()) + " tokens");
        if (c.allowCuda && torch::cuda::is_available())
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
    torch::Tensor loss(const torch::Tensor &ids, const torch::Tensor &labels, bool perSample = false)
    {
        auto compute = [&] { return perSample ? model->mlmSampleLosses(ids, labels) : model->mlmLoss(ids, labels); };
        if (device.is_cuda()) {
            // Mixed precision on the GPU: bf16 autocast needs no loss scaling.
            at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
            at::autocast::set_enabled(true);
            auto l = compute();
            at::autocast::set_enabled(false);
            at::autocast::clear_cache();
            return l;
        }
        return compute();
    }

    // Sets every parameter's gradient from a flat vector in registration order (size checked).
    void setGradients(std::span<const float> flat)
    {
        if (static_cast<long long>(flat.size()) != model->parameterCount())
            throw Error("averaged gradient has " + std::to_string(flat.size()) + " elements, the model "
                        + std::to_string(model->parameterCount()));
        torch::NoGradGuard noGrad;
        std::size_t offset = 0;
        for (auto &p : model->parameters()) {
            auto src = torch::from_blob(const_cast<float *>(flat.data() + offset), p.sizes(), torch::kFloat);
            if (!p.grad().defined())
                p.mutable_grad() = torch::zeros_like(p);
            p.grad().copy_(src);
            offset += static_cast<std::size_t>(p.numel());
        }
    }

    // Clips the gradients, checks them and r.loss, and applies LAMB at the schedule's rate for
    // the next epoch: fills r.gradNorm, learningRate, applied, skipReason and step.
    void optimizerStep(StepResult &r, bool tookPart)
    {
        const auto params = model->parameters();
        const double maxNorm = manifest.training.maxGradNorm;
        r.gradNorm = torch::nn::utils::clip_grad_norm_(params, maxNorm > 0 ? maxNorm
                                                                           : std::numeric_limits<double>::infinity());
        r.learningRate = schedule.at(optimizer->stepCount() + 1);
        if (!std::isfinite(r.gradNorm) || !std::isfinite(r.loss)) {
            std::ostringstream why;
            why << "non-finite " << (std::isfinite(r.loss) ? "gradient" : "loss") << " (loss " << r.loss
                << ", gradient norm " << r.gradNorm << "): step skipped, parameters unchanged";
            r.skipReason = why.str();
            log::warning("train", r.skipReason);
        } else {
            optimizer->step(r.learningRate);
            r.applied = true;
            if (tookPart)
                ++contribution.stepsTakenPart;
        }
        r.step = optimizer->stepCount();
    }

    void clearGradients()
    {
        for (auto &p : model->parameters())
            if (p.grad().defined())
                p.grad().zero_();
        accumulated = 0;
        accumulatedLossTimesSamples = 0.0;
    }

    // Drops the local accumulation and any detached gradient's boundary (a state was loaded).
    void resetAccumulation()
    {
        clearGradients();
        detached.reset();
    }
};

Trainer::Trainer(const RunManifest &manifest, const Tokenizer &tokenizer, const TrainerConfig &config)
    : d(std::make_unique<Impl>(manifest, tokenizer, config))
{
}

Trainer::~Trainer() = default;

MicroBatchResult Trainer::accumulateMicroBatch(int maxSamples)
{
    const int samples = std::max(1, std::min(maxSamples, d->microBatch));
    const auto start = Clock::now();
    if (d->accumulated == 0)
        d->accumulationStart = start;
    auto tokens = d->data.nextTrainBatch(samples);
    auto batch = d->masker.mask(tokens, d->manifest.training.sequenceLength);
    auto [ids, labels] = d->toTensors(batch, samples);
    // The sum over samples of each one's mean masked-token loss (Albert.h mlmSampleLosses):
    // divided by the batch's sample count at the step, whatever the micro-batches were.
    auto lossSum = d->loss(ids, labels, true).sum();
    lossSum.backward();
    MicroBatchResult r;
    r.samples = samples;
    r.loss = lossSum.item<double>() / static_cast<double>(samples);
    r.seconds = secondsSince(start);
    d->accumulated += samples;
    d->accumulatedLossTimesSamples += r.loss * samples;
    d->contribution.samples += samples;
    d->contribution.computeSeconds += r.seconds;
    return r;
}

long Trainer::accumulatedSamples() const { return d->accumulated; }

void Trainer::setMicroBatchSize(int samples)
{
    d->microBatch = std::clamp(samples, 1, d->manifest.training.microBatchSize);
}

int Trainer::microBatchSize() const { return d->microBatch; }

StepResult Trainer::applyStep()
{
    StepResult r;
    r.samples = d->accumulated;
    if (d->accumulated == 0) {
        r.step = step();
        r.skipReason = "no samples accumulated";
        return r;
    }
    {
        torch::NoGradGuard noGrad;
        const double scale = 1.0 / static_cast<double>(d->accumulated);
        for (auto &p : d->model->parameters())
            if (p.grad().defined())
                p.grad().mul_(scale);
    }
    return finishStep(r);
}

std::vector<float> Trainer::meanGradientFlat() const
{
    const double scale = d->accumulated > 0 ? 1.0 / static_cast<double>(d->accumulated) : 0.0;
    std::vector<torch::Tensor> grads;
    for (const auto &p : d->model->parameters())
        grads.push_back(p.grad().defined() ? p.grad().detach() * scale : torch::zeros_like(p));
    return flatten(grads);
}

StepResult Trainer::applyAveragedStep(std::span<const float> meanGradient, long batchSamples)
{
    d->setGradients(meanGradient);
    StepResult r;
    r.samples = batchSamples;
    return finishStep(r);
}

StepResult Trainer::finishStep(StepResult r)
{
    // The loss reported is this peer's own: the swarm's is the weighted mean of the peers'.
    r.loss = d->accumulated > 0 ? d->accumulatedLossTimesSamples / static_cast<double>(d->accumulated) : 0.0;
    d->optimizerStep(r, d->accumulated > 0);
    r.seconds = d->accumulated > 0 ? secondsSince(d->accumulationStart) : 0.0;
    r.samplesPerSecond = r.seconds > 0 ? static_cast<double>(d->accumulated) / r.seconds : 0.0;
    d->clearGradients();
    d->boundaryPosition = d->data.position();
    d->boundaryMaskerState = d->masker.state();
    d->detached.reset();
    return r;
}

DetachedGradient Trainer::detachGradient()
{
    DetachedGradient g;
    g.meanGradient = meanGradientFlat();
    g.samples = d->accumulated;
    g.loss = d->accumulated > 0 ? d->accumulatedLossTimesSamples / static_cast<double>(d->accumulated) : 0.0;
    g.seconds = d->accumulated > 0 ? secondsSince(d->accumulationStart) : 0.0;
    g.epoch = step();
    d->clearGradients();
    d->detached = Impl::Boundary{g.epoch, d->data.position(), d->masker.state()};
    return g;
}

StepResult Trainer::applyDetachedStep(const DetachedGradient &detached, std::span<const float> gradient,
                                      long batchSamples)
{
    if (!d->detached || d->detached->epoch != detached.epoch || detached.epoch != step())
        throw Error("the detached gradient of epoch " + std::to_string(detached.epoch)
                    + " does not belong to this trainer's epoch " + std::to_string(step()));
    // The next step's accumulation, computed meanwhile on these parameters, waits aside.
    std::vector<torch::Tensor> next;
    for (const auto &p : d->model->parameters())
        next.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
    d->setGradients(gradient);
    StepResult r;
    r.samples = batchSamples;
    r.loss = detached.loss;
    d->optimizerStep(r, detached.samples > 0);
    r.seconds = detached.seconds;
    r.samplesPerSecond = r.seconds > 0 ? static_cast<double>(detached.samples) / r.seconds : 0.0;
    {
        torch::NoGradGuard noGrad;
        auto params = d->model->parameters();
        for (std::size_t i = 0; i < params.size(); ++i)
            params[i].grad().copy_(next[i]);
    }
    d->boundaryPosition = d->detached->position;
    d->boundaryMaskerState = d->detached->maskerState;
    d->detached.reset();
    return r;
}

StepResult Trainer::trainStep(const std::atomic<bool> *stop)
{
    const long target = d->manifest.training.targetBatchSize;
    while (d->accumulated < target) {
        if (stop && stop->load()) {
            StepResult r;
            r.step = step();
            r.samples = d->accumulated;
            r.skipReason = "interrupted";
            d->clearGradients();
            // Rewind to the boundary so that the dropped samples are trained on after a resume.
            d->data.setPosition(d->boundaryPosition);
            d->masker.setState(d->boundaryMaskerState);
            return r;
        }
        accumulateMicroBatch(static_cast<int>(target - d->accumulated));
    }
    return applyStep();
}

double Trainer::validationLoss()
{
    torch::NoGradGuard noGrad;
    const int T = d->manifest.training.sequenceLength;
    auto tokens = d->data.validationBatch(d->manifest.training.validationSamples);
    const int sequences = static_cast<int>(tokens.size() / static_cast<std::size_t>(T));
    DynamicMasker fixedMasks(d->manifest.model.vocabSize, d->manifest.training.maskProbability, ValidationMaskSeed);
    double weighted = 0.0;
    std::int64_t masked = 0;
    for (int start = 0; start < sequences; start += d->microBatch) {
        const int n = std::min(d->microBatch, sequences - start);
        std::vector<std::int32_t> part(tokens.begin() + static_cast<std::ptrdiff_t>(start) * T,
                                       tokens.begin() + static_cast<std::ptrdiff_t>(start + n) * T);
        auto batch = fixedMasks.mask(part, T);
        auto [ids, labels] = d->toTensors(batch, n);
        weighted += d->loss(ids, labels).item<double>() * static_cast<double>(batch.maskedCount);
        masked += batch.maskedCount;
    }
    return masked > 0 ? weighted / static_cast<double>(masked) : std::nan("");
}

long Trainer::step() const { return d->optimizer->stepCount(); }
long long Trainer::parameterCount() const { return d->model->parameterCount(); }
std::string Trainer::deviceName() const { return d->device.str(); }
ContributionTotals Trainer::contribution() const { return d->contribution; }
const RunManifest &Trainer::manifest() const { return d->manifest; }

void Trainer::saveCheckpoint(const std::filesystem::path &directory)
{
    Checkpoint c;
    c.meta = {{"format", 1},
              {"run_id", d->manifest.runId},
              {"model", shapeJson(d->manifest.model)},
              {"step", step()},
              {"data_seed", d->data.seed()},
              {"data_pass", d->boundaryPosition.pass},
              {"data_index", d->boundaryPosition.index},
              {"masker_state", d->boundaryMaskerState},
              {"contribution", {{"samples", d->contribution.samples},
                                {"compute_seconds", d->contribution.computeSeconds},
                                {"steps_taken_part", d->contribution.stepsTakenPart}}}};
    const auto named = d->model->named_parameters();
    for (const auto &p : named)
        c.tensors.push_back({checkpointParameterName(p.key()), p.value()});
    for (auto &s : d->optimizer->state())
        c.tensors.push_back({"optim." + s.name, s.tensor});
    CheckpointStore(directory).save(c);
}

std::optional<long> Trainer::restoreCheckpoint(const std::filesystem::path &directory)
{
    const auto named = d->model->named_parameters();
    auto accept = [&](const Checkpoint &c) {
        if (c.meta.value("run_id", std::string()) != d->manifest.runId)
            throw Error("it belongs to run \"" + c.meta.value("run_id", std::string()) + "\", not \""
                        + d->manifest.runId + "\"");
        if (c.meta.value("model", nlohmann::json()) != shapeJson(d->manifest.model))
            throw Error("its model shape differs from the manifest's");
        if (c.tensors.size() != named.size() * 3)
            throw Error("it holds " + std::to_string(c.tensors.size()) + " tensors, expected "
                        + std::to_string(named.size() * 3));
        for (std::size_t i = 0; i < named.size(); ++i) {
            const auto &t = c.tensors[i];
            if (t.name != checkpointParameterName(named[i].key()) || t.tensor.sizes() != named[i].value().sizes())
                throw Error("tensor " + t.name + " does not match parameter " + named[i].key());
        }
    };
    auto loaded = CheckpointStore(directory).loadNewestGood(accept);
    if (!loaded)
        return std::nullopt;
    const auto &meta = loaded->meta;
    try {
        torch::NoGradGuard noGrad;
        for (std::size_t i = 0; i < named.size(); ++i)
            named[i].value().copy_(loaded->tensors[i].tensor);
        std::vector<NamedTensor> optimState;
        for (std::size_t i = named.size(); i < loaded->tensors.size(); ++i) {
            auto t = loaded->tensors[i];
            t.name = t.name.substr(std::string("optim.").size());
            t.tensor = t.tensor.to(d->device);
            optimState.push_back(std::move(t));
        }
        d->optimizer->loadState(optimState, meta.at("step").get<long>());
        d->boundaryPosition = {meta.at("data_pass").get<std::uint64_t>(), meta.at("data_index").get<std::uint64_t>()};
        d->boundaryMaskerState = meta.at("masker_state").get<std::string>();
        d->data.setPosition(d->boundaryPosition);
        d->masker.setState(d->boundaryMaskerState);
        const auto &contribution = meta.at("contribution");
        d->contribution.samples = contribution.at("samples").get<long long>();
        d->contribution.computeSeconds = contribution.at("compute_seconds").get<double>();
        d->contribution.stepsTakenPart = contribution.at("steps_taken_part").get<long>();
    } catch (const nlohmann::json::exception &e) {
        throw Error(std::string("checkpoint metadata is incomplete: ") + e.what());
    }
    d->resetAccumulation();
    log::info("ckpt", "resumed at step " + std::to_string(step()) + " from " + directory.string());
    return step();
}

std::vector<float> Trainer::parametersFlat() const { return flatten(d->model->parameters()); }

long long Trainer::stateElements() const { return 3 * parameterCount(); }

std::vector<float> Trainer::stateFlat() const
{
    auto tensors = d->model->parameters();
    for (const auto &s : d->optimizer->state()) // exp_avg.0..n-1, exp_avg_sq.0..n-1
        tensors.push_back(s.tensor);
    return flatten(tensors);
}

void Trainer::loadStateFlat(std::span<const float> state, long epoch)
{
    const auto p = static_cast<std::size_t>(parameterCount());
    if (state.size() != 3 * p)
        throw Error("state has " + std::to_string(state.size()) + " elements, this model needs " + std::to_string(3 * p));
    if (epoch < 0)
        throw Error("state epoch " + std::to_string(epoch) + " is negative");
    auto all = torch::from_blob(const_cast<float *>(state.data()), {static_cast<std::int64_t>(state.size())}, torch::kFloat);
    if (!torch::isfinite(all).all().item<bool>())
        throw Error("state holds non-finite values");
    torch::NoGradGuard noGrad;
    std::int64_t offset = 0;
    for (auto &param : d->model->parameters()) {
        const auto n = param.numel();
        param.copy_(all.slice(0, offset, offset + n).view(param.sizes()));
        offset += n;
    }
    auto optim = d->optimizer->state();
    for (auto &s : optim) {
        const auto n = s.tensor.numel();
        s.tensor = all.slice(0, offset, offset + n).view(s.tensor.sizes()).clone().to(d->device);
        offset += n;
    }
    d->optimizer->loadState(optim, epoch);
    d->resetAccumulation();
}

void Trainer::restartData(std::uint64_t seed)
{
    d->data.reseed(seed);
    d->masker = DynamicMasker(d->manifest.model.vocabSize, d->manifest.training.maskProbability,
                              splitMix64(seed ^ 0xA5A5A5A5ULL));
}

} // namespace dedloc
