#pragma once
// Learning-rate schedule keyed on the optimizer step (in a swarm: the global epoch, docs/PROTOCOL.md
// "Global batch"): linear warm-up from 0 to the peak over `warmupSteps`, then linear decay to 0
// at `totalSteps` (the schedule of BERT/ALBERT pretraining and of the sahajBERT run).
//   lr(s) = peak * s / warmup                                for s < warmup
//   lr(s) = peak * max(0, (total - s) / (total - warmup))    otherwise
namespace dedloc {

struct LinearWarmupDecay {
    double peak = 0.0;
    long warmupSteps = 0;
    long totalSteps = 1;

    [[nodiscard]] double at(long step) const;
};

} // namespace dedloc
