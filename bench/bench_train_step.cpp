// Training-step throughput: our Trainer (data pipeline, dynamic masking, accumulation, clipping,
// non-finite guard, LAMB) beside a bare libtorch loop over the same ALBERT model (pre-made masked
// batches, forward/backward, torch::optim::Adam) in the same process, for each preset.
// Prints samples/s of both and our overhead. A benchmark measures; it asserts nothing.
//
// Both sides run on cuda:0 with bf16 autocast when libtorch has CUDA and a GPU is present (--cpu:
// on the CPU regardless); GPU figures wait for the device at the start and end of a measurement.
//
// Each figure is the median of --repeats measurements, bare and ours alternating, so that a
// transient slowdown of the machine hits both sides alike.
//
//   bench_train_step [--seconds S] [--repeats R] [--threads N] [--presets tiny,default,large] [--target N]
//                    [--micro-batch N] [--cpu]
#include "model/Albert.h"
#include "model/DataPipeline.h"
#include "model/Masking.h"
#include "model/Tokenizer.h"
#include "run/RunMaker.h"
#include "run/RunManifest.h"
#include "system/TorchRuntime.h"
#include "train/CudaAutocast.h"
#include "train/Trainer.h"
#include "util/Log.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

using namespace dedloc;
using Clock = std::chrono::steady_clock;

namespace {

void waitForDevice(const torch::Device &device)
{
    if (device.is_cuda())
        torch::cuda::synchronize();
}

double bareLoop(const RunManifest &run, const Tokenizer &tokenizer, double seconds, const torch::Device &device)
{
    torch::manual_seed(1);
    AlbertMlm model(run.model);
    model->to(device);
    torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-4));
    // Pre-made batches: the bare loop pays for no data work at all.
    DataPipeline data(tokenizer, {run.resolve(run.corpus.files[0].path)}, run.corpus.validationFraction,
                      run.training.sequenceLength, 1);
    DynamicMasker masker(run.model.vocabSize, run.training.maskProbability, 1);
    const int micro = run.training.microBatchSize, T = run.training.sequenceLength;
    std::vector<std::pair<torch::Tensor, torch::Tensor>> batches;
    for (int i = 0; i < 8; ++i) {
        auto b = masker.mask(data.nextTrainBatch(micro), T);
        batches.emplace_back(torch::from_blob(b.inputIds.data(), {micro, T}, torch::kInt).to(torch::kLong).to(device),
                             torch::from_blob(b.labels.data(), {micro, T}, torch::kLong).clone().to(device));
    }
    const int perStep = run.training.targetBatchSize / micro;
    long samples = 0;
    int warm = 1;
    auto start = Clock::now();
    for (std::size_t i = 0;; ++i) {
        for (int k = 0; k < perStep; ++k) {
            const auto &[ids, labels] = batches[(i * perStep + k) % batches.size()];
            torch::Tensor loss;
            {
                const CudaAutocast autocast(device.is_cuda());
                loss = model->mlmLoss(ids, labels);
            }
            loss.backward();
        }
        adam.step();
        adam.zero_grad();
        if (warm > 0) { // first step warms caches and allocators
            --warm;
            waitForDevice(device);
            start = Clock::now();
            continue;
        }
        samples += run.training.targetBatchSize;
        waitForDevice(device);
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        if (elapsed >= seconds)
            return static_cast<double>(samples) / elapsed;
    }
}

double ourTrainer(const RunManifest &run, const Tokenizer &tokenizer, double seconds, const torch::Device &device)
{
    Trainer trainer(run, tokenizer, TrainerConfig{1, device.is_cuda(), 0, {}});
    trainer.trainStep(); // warm-up
    long samples = 0;
    const auto start = Clock::now();
    for (;;) {
        samples += trainer.trainStep().samples;
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        if (elapsed >= seconds)
            return static_cast<double>(samples) / elapsed;
    }
}

} // namespace

int main(int argc, char **argv)
{
    double seconds = 20;
    int threads = 0;
    int target = 64;
    int repeats = 3;
    int micro = 0;
    bool cpu = false;
    std::string presets = "tiny,default,large";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--cpu") {
            cpu = true;
            continue;
        }
        if (i + 1 == argc)
            break;
        ++i;
        if (a == "--seconds")
            seconds = std::stod(argv[i]);
        else if (a == "--threads")
            threads = std::stoi(argv[i]);
        else if (a == "--presets")
            presets = argv[i];
        else if (a == "--repeats")
            repeats = std::max(1, std::stoi(argv[i]));
        else if (a == "--target")
            target = std::stoi(argv[i]);
        else if (a == "--micro-batch")
            micro = std::stoi(argv[i]);
    }
    log::setMinimumLevel(log::Level::Warning);
    threads = configureTorchThreads(threads);
    const auto blas = detectBlas();
    auto base = loadRunManifest(std::filesystem::path(DEDLOC_SOURCE_RESOURCES) / "default-run" / "manifest.json");
    const Tokenizer tokenizer(base.resolve(base.tokenizer.path));
    base.training.targetBatchSize = target;
    if (micro > 0)
        base.training.microBatchSize = micro;
    const torch::Device device = !cpu && torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::kCPU;
    std::printf("bench_train_step: %s, %d threads, BLAS %s, sequence %d, micro-batch %d, target batch %d, %.0f s per "
                "measurement, median of %d\n",
                device.is_cuda() ? "cuda:0 (bf16 autocast)" : "cpu", threads, blas.kind.c_str(), base.training.sequenceLength, base.training.microBatchSize, target,
                seconds, repeats);
    std::printf("%-8s %12s %14s %14s %10s\n", "preset", "parameters", "bare samples/s", "ours samples/s", "overhead");
    std::stringstream list(presets);
    for (std::string preset; std::getline(list, preset, ',');) {
        auto run = base;
        run.model = presetShape(preset, base.model.vocabSize, base.model.maxPositions);
        std::vector<double> bares, ourss;
        for (int r = 0; r < repeats; ++r) {
            bares.push_back(bareLoop(run, tokenizer, seconds, device));
            ourss.push_back(ourTrainer(run, tokenizer, seconds, device));
        }
        auto median = [](std::vector<double> v) {
            std::sort(v.begin(), v.end());
            return v[v.size() / 2];
        };
        const double bare = median(bares);
        const double ours = median(ourss);
        std::printf("%-8s %12lld %14.1f %14.1f %9.1f%%\n", preset.c_str(),
                    static_cast<long long>(AlbertMlm(run.model)->parameterCount()), bare, ours,
                    100.0 * (bare / ours - 1.0));
        std::fflush(stdout);
    }
    return 0;
}
