#pragma once
// The one line a trainer prints per optimizer step, and per validation, on its status stream
// (the solo session and the swarm trainer alike):
//   [name] step     12 | loss 8.8581 |   25.7 samples/s | peers 3 | averaged with 1 peer(s)
//   step     12 | loss 8.8581 |   25.7 samples/s | lr 1.20e-04 | grad norm 0.912
//   [name] step     20 | validation loss 7.9312
// "[name] " only for a named peer (a local swarm's peers share a terminal); "loss   none" when the
// peer computed nothing for the step; " | SKIPPED (non-finite)" after a step that was not
// applied. Units: samples per second, nats. Pure; thread-safe.
#include <cstdio>
#include <optional>
#include <string>

namespace dedloc {

struct StepLineFields {
    std::string name;                   // peer name; "" for none
    long step = 0;                      // the optimizer step (epoch) after the step
    std::optional<double> loss;         // mean masked-LM loss of this peer's samples
    double samplesPerSecond = 0.0;      // this peer's throughput
    std::optional<int> peers;           // swarm: peers this one knows of
    std::optional<double> learningRate; // solo: the schedule's rate of the step
    std::optional<double> gradNorm;     // solo: global L2 norm before clipping
    std::string status;                 // swarm: how the step was averaged
    bool applied = true;
};

[[nodiscard]] std::string stepLine(const StepLineFields &fields);
[[nodiscard]] std::string validationLine(const std::string &name, long step, double loss);
// Writes `line` and a newline to `out` (nothing when null) and flushes it.
void printLine(std::FILE *out, const std::string &line);

} // namespace dedloc
