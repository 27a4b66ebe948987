// Training under attack: four trainers of the tiny ALBERT take collaborative steps together, one
// of them hostile, and the reducers' rule (averaging/RobustAggregation.h) decides what the swarm
// applies. The rounds are simulated in one process (each global step: every trainer's mean
// gradient over its own micro-batch, aggregated part by part as the reducers would, applied by
// every trainer with LAMB), so the only difference between the runs is the rule and the attack.
// Prints the validation loss every 10 steps for each case. A benchmark measures; it asserts nothing.
//
//   bench_robustaggregation [--steps N] [--threads N] [--micro N]
//
// Cases: clean/mean (DeDLOC), clean/centered-clip (what the defence costs without an attack),
// and the hostile trainer sending its gradient x 1e3 or x -1e3 under each rule.
#include "averaging/RobustAggregation.h"
#include "model/Tokenizer.h"
#include "run/RunMaker.h"
#include "run/RunManifest.h"
#include "system/TorchRuntime.h"
#include "train/Trainer.h"
#include "util/Log.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace dedloc;

namespace {

constexpr int Peers = 4;
constexpr std::size_t PartElements = 128 * 1024; // the all-reduce's default part

struct Case {
    const char *name;
    AggregationRule rule;
    float hostileScale; // 1: an honest fourth trainer
};

// The reducers' work for one step: every part of the vector aggregated over the peers' copies.
std::vector<float> aggregate(const AggregationSpec &spec, const std::vector<std::vector<float>> &grads, double weight)
{
    std::vector<float> out(grads[0].size());
    for (std::size_t offset = 0; offset < out.size(); offset += PartElements) {
        const std::size_t count = std::min(PartElements, out.size() - offset);
        std::vector<const float *> xs;
        for (const auto &g : grads)
            xs.push_back(g.data() + offset);
        aggregateParts(spec, xs, std::vector<double>(grads.size(), weight), {out.data() + offset, count});
    }
    return out;
}

// Validation losses at steps 0, 10, 20, ... of one case. Every case starts the same peers from
// the same state and data streams (`start`; the data of seed i + 1 for peer i).
std::vector<double> runCase(std::vector<std::unique_ptr<Trainer>> &peers, const std::vector<float> &start,
                            const Case &c, int steps, int micro)
{
    for (std::size_t i = 0; i < peers.size(); ++i) {
        peers[i]->loadStateFlat(start, 0);
        peers[i]->restartData(i + 1);
    }
    std::vector<double> losses{peers[0]->validationLoss()};
    for (int step = 1; step <= steps; ++step) {
        std::vector<std::vector<float>> grads;
        for (auto &p : peers) {
            p->accumulateMicroBatch(micro);
            grads.push_back(p->meanGradientFlat());
        }
        for (float &x : grads[Peers - 1])
            x *= c.hostileScale;
        const auto average = aggregate({c.rule, 2.0}, grads, micro);
        for (auto &p : peers)
            p->applyAveragedStep(average, static_cast<long>(Peers) * micro);
        if (step % 10 == 0)
            losses.push_back(peers[0]->validationLoss());
    }
    return losses;
}

} // namespace

int main(int argc, char **argv)
{
    int steps = 40, threads = 2, micro = 16;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--steps"))
            steps = std::stoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--threads"))
            threads = std::stoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--micro"))
            micro = std::stoi(argv[i + 1]);
    }
    log::setMinimumLevel(log::Level::Error);
    threads = configureTorchThreads(threads);
    auto run = loadRunManifest(std::filesystem::path(DEDLOC_SOURCE_RESOURCES) / "default-run" / "manifest.json");
    const Tokenizer tokenizer(run.resolve(run.tokenizer.path));
    run.model = presetShape("tiny", run.model.vocabSize, run.model.maxPositions);
    run.training.targetBatchSize = Peers * micro;
    run.training.validationSamples = 64;
    run.schedule.warmupSteps = 5;
    run.schedule.totalSteps = 1000;
    std::printf("bench_robustaggregation: tiny ALBERT, %d peers x %d samples a step, %d steps, %d threads, LAMB lr %g\n",
                Peers, micro, steps, threads, run.optimizer.learningRate);
    const Case cases[] = {
        {"clean, mean", AggregationRule::Mean, 1.0F},
        {"clean, centered-clip", AggregationRule::CenteredClip, 1.0F},
        {"x1e3, mean", AggregationRule::Mean, 1e3F},
        {"x1e3, centered-clip", AggregationRule::CenteredClip, 1e3F},
        {"x-1e3, mean", AggregationRule::Mean, -1e3F},
        {"x-1e3, centered-clip", AggregationRule::CenteredClip, -1e3F},
    };
    std::printf("%-22s", "case (hostile, rule)");
    std::fflush(stdout);
    for (int s = 0; s <= steps; s += 10)
        std::printf(" %8s", ("step " + std::to_string(s)).c_str());
    std::printf(" %9s\n", "vs clean");
    std::vector<std::unique_ptr<Trainer>> peers; // the corpus is tokenized once per peer
    for (int i = 0; i < Peers; ++i)
        peers.push_back(std::make_unique<Trainer>(run, tokenizer, TrainerConfig{static_cast<std::uint64_t>(i + 1), false, micro, {}}));
    const auto start = peers[0]->stateFlat();
    double clean = 0.0;
    for (const auto &c : cases) {
        const auto losses = runCase(peers, start, c, steps, micro);
        if (clean == 0.0)
            clean = losses.back();
        std::printf("%-22s", c.name);
        for (double l : losses)
            std::printf(" %8.4f", l);
        std::printf(" %+8.1f%%\n", 100.0 * (losses.back() - clean) / clean);
        std::fflush(stdout);
    }
    return 0;
}
