#include "peer/DownstreamMonitor.h"

#include "util/Error.h"
#include "util/Log.h"

namespace dedloc {

namespace fs = std::filesystem;

DownstreamMonitor::DownstreamMonitor(RunManifest manifest, DownstreamSchedule schedule, fs::path workDirectory,
                                     std::function<void(const nlohmann::json &)> record)
    : m_manifest(std::move(manifest)), m_schedule(std::move(schedule)), m_work(std::move(workDirectory)),
      m_record(std::move(record))
{
    if (m_schedule.everyNSteps < 1)
        throw Error("downstream evaluation every " + std::to_string(m_schedule.everyNSteps) + " steps: expected >= 1");
    m_schedule.options.fineTune.stop = &m_stop;
    m_thread = std::thread([this] { loop(); });
}

DownstreamMonitor::~DownstreamMonitor()
{
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    m_thread.join();
}

bool DownstreamMonitor::offer(const fs::path &checkpoint, long step)
{
    std::lock_guard lock(m_mutex);
    if (m_pending || (m_lastStarted && step < *m_lastStarted + m_schedule.everyNSteps))
        return false;
    std::error_code ec;
    fs::create_directories(m_work, ec);
    fs::copy_file(checkpoint, m_work / "evaluating.ddlc", fs::copy_options::overwrite_existing, ec);
    if (ec) {
        log::warning("eval", "cannot copy " + checkpoint.string() + " for evaluation: " + ec.message());
        return false;
    }
    m_pending = step;
    m_lastStarted = step;
    m_wake.notify_all();
    return true;
}

void DownstreamMonitor::loop()
{
    while (true) {
        long step;
        {
            std::unique_lock lock(m_mutex);
            m_wake.wait(lock, [&] { return m_stop.load() || m_pending.has_value(); });
            if (m_stop.load())
                return;
            step = *m_pending;
        }
        evaluateCopy(step);
        ++m_finished;
        std::lock_guard lock(m_mutex);
        m_pending.reset();
    }
}

void DownstreamMonitor::evaluateCopy(long step)
{
    auto options = m_schedule.options;
    options.control = options.control && !m_control;
    try {
        const auto result = evaluateDownstream(m_manifest, m_work / "evaluating.ddlc", m_schedule.task, options);
        if (result.control)
            m_control = result.control;
        m_record(record(result, m_control));
    } catch (const Error &e) {
        if (!m_stop.load())
            log::warning("eval", "the downstream evaluation of step " + std::to_string(step) + " failed: " + e.what()
                                     + "; the next kept state is tried");
    }
}

nlohmann::json DownstreamMonitor::record(const DownstreamResult &r, const std::optional<FineTuneResult> &control)
{
    nlohmann::json j = {{"task", r.task},
                        {"train_examples", r.trainExamples},
                        {"test_examples", r.pretrained.test.examples},
                        {"accuracy", r.pretrained.test.accuracy},
                        {"macro_f1", r.pretrained.test.macroF1},
                        {"seconds", r.seconds}};
    if (r.epoch)
        j["step"] = *r.epoch;
    if (r.pretrained.dev)
        j["dev_accuracy"] = r.pretrained.dev->accuracy;
    if (control) {
        j["control_accuracy"] = control->test.accuracy;
        j["control_macro_f1"] = control->test.macroF1;
    }
    return j;
}

} // namespace dedloc
