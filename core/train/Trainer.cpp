#include "train/TrainerImpl.h"

namespace dedloc {

using trainer_detail::Clock;
using trainer_detail::secondsSince;
using trainer_detail::ValidationMaskSeed;

Trainer::Trainer(const RunManifest &manifest, const Tokenizer &tokenizer, const TrainerConfig &config)
    : d(std::make_unique<Impl>(manifest, tokenizer, config))
{
    if (!config.devices.empty())
        setDevices(config.devices);
}

Trainer::~Trainer() = default;

MicroBatchResult Trainer::accumulateMicroBatch(int maxSamples)
{
    int samples = std::max(1, std::min(maxSamples, d->microBatch));
    if (d->outer) // a micro-batch never spans two inner steps
        samples = std::min(samples, static_cast<int>(d->innerBatch - d->innerAccumulated));
    const auto start = Clock::now();
    if (d->accumulated == 0)
        d->accumulationStart = start;
    auto tokens = d->data.nextTrainBatch(samples);
    auto batch = d->masker.mask(tokens, d->manifest.training.sequenceLength);
    auto [ids, labels] = d->toTensors(batch, samples);
    // The sum over samples of each one's mean masked-token loss (Albert.h mlmSampleLosses):
    // divided by the batch's sample count at the step, whatever the micro-batches were.
    MicroBatchResult r;
    const double lossSum = d->backwardLossSum(ids, labels, r.devices);
    r.samples = samples;
    r.loss = lossSum / static_cast<double>(samples);
    r.seconds = secondsSince(start);
    d->accumulated += samples;
    d->accumulatedLossTimesSamples += r.loss * samples;
    d->contribution.samples += samples;
    d->contribution.computeSeconds += r.seconds;
    if (d->outer && (d->innerAccumulated += samples) >= d->innerBatch)
        d->innerStep();
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
    if (d->outer)
        return finishStep(r, gradientToAverage());
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

std::vector<float> Trainer::gradientToAverage()
{
    if (!d->outer)
        return meanGradientFlat();
    d->innerStep();
    return d->outer->pseudoGradient();
}

StepResult Trainer::applyAveragedStep(std::span<const float> meanGradient, long batchSamples)
{
    StepResult r;
    r.samples = batchSamples;
    if (d->outer) // the local parameters, inner steps and all, give way to the new anchor
        return finishStep(r, meanGradient);
    d->setGradients(meanGradient);
    return finishStep(r);
}

StepResult Trainer::finishStep(StepResult r, std::span<const float> pseudoGradient)
{
    // The loss reported is this peer's own: the swarm's is the weighted mean of the peers'.
    r.loss = d->accumulated > 0 ? d->accumulatedLossTimesSamples / static_cast<double>(d->accumulated) : 0.0;
    if (d->outer)
        d->outerStep(r, pseudoGradient, d->accumulated > 0);
    else
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
    if (d->outer) { // the pseudo-gradient up to here; the inner steps go on from these parameters
        d->innerStep();
        g.meanGradient = d->outer->pseudoGradient();
        d->detachedParameters.clear();
        for (const auto &p : d->model->parameters())
            d->detachedParameters.push_back(p.detach().clone());
    } else {
        g.meanGradient = meanGradientFlat();
    }
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
    if (d->outer)
        return applyDetachedOuterStep(detached, gradient, batchSamples);
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

StepResult Trainer::applyDetachedOuterStep(const DetachedGradient &detached, std::span<const float> pseudoGradient,
                                           long batchSamples)
{
    // The inner steps taken since the detach, u = w - w_detach, move on to the new anchor:
    // w <- theta_next + u (one outer step of delay, as overlapped DiLoCo merges it).
    std::vector<torch::Tensor> progress;
    {
        torch::NoGradGuard noGrad;
        auto params = d->model->parameters();
        for (std::size_t i = 0; i < params.size(); ++i)
            progress.push_back(params[i].detach() - d->detachedParameters[i]);
    }
    StepResult r;
    r.samples = batchSamples;
    r.loss = detached.loss;
    d->outerStep(r, pseudoGradient, detached.samples > 0); // the parameters are the anchor now
    r.seconds = detached.seconds;
    r.samplesPerSecond = r.seconds > 0 ? static_cast<double>(detached.samples) / r.seconds : 0.0;
    {
        torch::NoGradGuard noGrad;
        auto params = d->model->parameters();
        for (std::size_t i = 0; i < params.size(); ++i)
            params[i].add_(progress[i]);
    }
    d->detachedParameters.clear();
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
            if (d->outer) // the inner steps taken since are dropped too
                d->outer->resetToAnchor();
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

long Trainer::step() const { return d->epoch(); }
long long Trainer::parameterCount() const { return d->model->parameterCount(); }
std::string Trainer::deviceName() const
{
    std::string name = d->device.str();
    for (const auto &replica : d->replicaDevices) {
        name += '+';
        name += replica.str();
    }
    return name;
}
ContributionTotals Trainer::contribution() const { return d->contribution; }
const RunManifest &Trainer::manifest() const { return d->manifest; }

void Trainer::restartData(std::uint64_t seed)
{
    d->data.reseed(seed);
    d->masker = DynamicMasker(d->manifest.model.vocabSize, d->manifest.training.maskProbability,
                              splitMix64(seed ^ 0xA5A5A5A5ULL));
}

} // namespace dedloc

