#pragma once
// A single-peer training session as the headless app runs it: load and verify the run, restore
// the newest good checkpoint, train step after step printing one status line per step, validate
// and checkpoint every N steps, checkpoint on exit. The swarm issue replaces the local step with
// a collaborative one; the loop, metrics and checkpoint policy stay.
// Torch-free header. Runs on the calling thread; `stop` may be set from any thread (or a signal
// handler) and is honoured between micro-batches, i.e. within about one micro-batch time.
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>

namespace dedloc {

struct SessionOptions {
    std::filesystem::path manifest;      // run manifest (required)
    std::filesystem::path dataDir;       // identity; checkpoints in runs/<run id>/solo/ (never the swarm's)
    std::filesystem::path metricsOut;    // JSON lines; empty: none
    int threads = 0;                     // torch intra-op threads; 0: all cores
    bool allowCuda = true;
    double durationSeconds = 0.0;        // stop after this wall time (0: no limit)
    long maxSteps = 0;                   // stop at this optimizer step (0: schedule.total_steps)
    bool resume = true;                  // false: ignore existing checkpoints (they are kept)
    std::FILE *statusOut = stdout;       // one status line per step
};

// Returns a process exit code: 0 on a normal end (duration, steps or stop), 2 for bad input
// (the reason is logged as an error first).
int runTrainingSession(const SessionOptions &options, const std::atomic<bool> &stop);

} // namespace dedloc
