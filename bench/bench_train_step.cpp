// Training-step throughput: our Trainer (data pipeline, dynamic masking, accumulation, clipping,
// non-finite guard, LAMB) beside a bare libtorch loop over the same ALBERT model (pre-made masked
// batches, forward/backward, torch::optim::Adam) in the same process, for each preset.
// Prints samples/s of both and our overhead. A benchmark measures; it asserts nothing.
//
// Each figure is the median of --repeats measurements, bare and ours alternating, so that a
// transient slowdown of the machine hits both sides alike.
//
//   bench_train_step [--seconds S] [--repeats R] [--threads N] [--presets tiny,default,large] [--target N]
#include "model/Albert.h"
#include "model/DataPipeline.h"
#include "model/Masking.h"
#include "model/Tokenizer.h"
#include "run/RunMaker.h"
#include "run/RunManifest.h"
#include "system/TorchRuntime.h"
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

double bareLoop(const RunManifest &run, const Tokenizer &tokenizer, double seconds)
{
    torch::manual_seed(1);
    AlbertMlm model(run.model);
    torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-4));
    // Pre-made batches: the bare loop pays for no data work at all.
    DataPipeline data(tokenizer, {run.resolve(run.corpus.files[0].path)}, run.corpus.validationFraction,
                      run.training.sequenceLength, 1);
    DynamicMasker masker(run.model.vocabSize, run.training.maskProbability, 1);
    const int micro = run.training.microBatchSize, T = run.training.sequenceLength;
    std::vector<std::pair<torch::Tensor, torch::Tensor>> batches;
    for (int i = 0; i < 8; ++i) {
        auto b = masker.mask(data.nextTrainBatch(micro), T);
        batches.emplace_back(torch::from_blob(b.inputIds.data(), {micro, T}, torch::kInt).to(torch::kLong),
                             torch::from_blob(b.labels.data(), {micro, T}, torch::kLong).clone());
    }
    const int perStep = run.training.targetBatchSize / micro;
    long samples = 0;
    int warm = 1;
    auto start = Clock::now();
    for (std::size_t i = 0;; ++i) {
        for (int k = 0; k < perStep; ++k) {
            const auto &[ids, labels] = batches[(i * perStep + k) % batches.size()];
            model->mlmLoss(ids, labels).backward();
        }
        adam.step();
        adam.zero_grad();
        if (warm > 0) { // first step warms caches and allocators
            --warm;
            start = Clock::now();
            continue;
        }
        samples += run.training.targetBatchSize;
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        if (elapsed >= seconds)
            return static_cast<double>(samples) / elapsed;
    }
}

double ourTrainer(const RunManifest &run, const Tokenizer &tokenizer, double seconds)
{
    Trainer trainer(run, tokenizer, TrainerConfig{1, false, 0, {}});
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
    std::string presets = "tiny,default,large";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--seconds")
            seconds = std::stod(argv[i + 1]);
        else if (a == "--threads")
            threads = std::stoi(argv[i + 1]);
        else if (a == "--presets")
            presets = argv[i + 1];
        else if (a == "--repeats")
            repeats = std::max(1, std::stoi(argv[i + 1]));
        else if (a == "--target")
            target = std::stoi(argv[i + 1]);
    }
    log::setMinimumLevel(log::Level::Warning);
    threads = configureTorchThreads(threads);
    const auto blas = detectBlas();
    auto base = loadRunManifest(std::filesystem::path(DEDLOC_SOURCE_RESOURCES) / "default-run" / "manifest.json");
    const Tokenizer tokenizer(base.resolve(base.tokenizer.path));
    base.training.targetBatchSize = target;
    std::printf("bench_train_step: %d threads, BLAS %s, sequence %d, micro-batch %d, target batch %d, %.0f s per "
                "measurement, median of %d\n",
                threads, blas.kind.c_str(), base.training.sequenceLength, base.training.microBatchSize, target,
                seconds, repeats);
    std::printf("%-8s %12s %14s %14s %10s\n", "preset", "parameters", "bare samples/s", "ours samples/s", "overhead");
    std::stringstream list(presets);
    for (std::string preset; std::getline(list, preset, ',');) {
        auto run = base;
        run.model = presetShape(preset, base.model.vocabSize, base.model.maxPositions);
        std::vector<double> bares, ourss;
        for (int r = 0; r < repeats; ++r) {
            bares.push_back(bareLoop(run, tokenizer, seconds));
            ourss.push_back(ourTrainer(run, tokenizer, seconds));
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
