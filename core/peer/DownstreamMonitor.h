#pragma once
// The monitor's downstream evaluation: every time the monitor has saved the swarm's state of a
// new epoch it offers the checkpoint here; when the epoch is at least `everyNSteps` past the last
// one evaluated and no evaluation runs, the checkpoint is copied (the monitor's rotation and the
// archive may replace or prune the original meanwhile) and fine-tuned on the task in a thread of
// its own (eval/DownstreamEvaluation.h). The random-initialisation control does not depend on
// the checkpoint: it is computed once, with the first evaluation, and repeated in every result.
// Each result goes to `record` as one flat object (docs/METRICS.md "Downstream evaluation").
//
// Threads: offer() from the monitor's worker thread; `record` is called on the evaluation
// thread. The destructor stops a running fine-tuning between two of its batches (well under a
// second on the bundled run) and joins. A failed evaluation (a corrupt copy, a task directory
// gone) is logged and the next offer tries again; it never stops the monitor.
#include "eval/DownstreamEvaluation.h"
#include "run/RunManifest.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace dedloc {

struct DownstreamSchedule {
    std::filesystem::path task;   // the task directory (eval/LabelledText.h)
    long everyNSteps = 0;         // >= 1
    DownstreamOptions options;    // control: whether to compute it (once)
};

class DownstreamMonitor final {
public:
    // workDirectory holds the copy under evaluation ("evaluating.ddlc"); created when needed.
    DownstreamMonitor(RunManifest manifest, DownstreamSchedule schedule, std::filesystem::path workDirectory,
                      std::function<void(const nlohmann::json &)> record);
    ~DownstreamMonitor();
    DownstreamMonitor(const DownstreamMonitor &) = delete;
    DownstreamMonitor &operator=(const DownstreamMonitor &) = delete;

    // Returns true if an evaluation of `step` was started.
    bool offer(const std::filesystem::path &checkpoint, long step);
    // Evaluations finished (successful or not), for tests and the status.
    [[nodiscard]] long finished() const { return m_finished.load(); }

    // The flat record of one result (docs/METRICS.md): step, samples, task, example counts,
    // accuracy, macro-F1 (test split), dev accuracy, the control's scores, seconds.
    [[nodiscard]] static nlohmann::json record(const DownstreamResult &result,
                                               const std::optional<FineTuneResult> &control);

private:
    void loop();
    void evaluateCopy(long step);

    RunManifest m_manifest;
    DownstreamSchedule m_schedule;
    std::filesystem::path m_work;
    std::function<void(const nlohmann::json &)> m_record;
    std::optional<FineTuneResult> m_control;   // evaluation thread only
    std::atomic<bool> m_stop{false};
    std::atomic<long> m_finished{0};
    std::mutex m_mutex;                        // guards the three below
    std::condition_variable m_wake;
    std::optional<long> m_pending;             // the step of the copy to evaluate
    std::optional<long> m_lastStarted;
    std::thread m_thread;
};

} // namespace dedloc
