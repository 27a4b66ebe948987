#pragma once
// The monitor's metrics recorder: every peer publishes its latest step metrics under
// runKey(run, "metrics"); the monitor reads them every progress period and appends each
// (peer, step) it has not written yet as one JSON line (the peer's fields plus "recorded_at").
// Lines are flushed one by one (`tail -f` works). Records whose payload is not a JSON object
// with an integer "step" are skipped with a logged reason.
// Thread-safety: used from one thread (the control thread).
#include "net/DhtNode.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace dedloc {

class SwarmMetricsRecorder final {
public:
    // An empty path records nothing (but still counts). Throws dedloc::Error if it cannot open.
    explicit SwarmMetricsRecorder(const std::filesystem::path &file);
    ~SwarmMetricsRecorder();
    SwarmMetricsRecorder(const SwarmMetricsRecorder &) = delete;
    SwarmMetricsRecorder &operator=(const SwarmMetricsRecorder &) = delete;

    // Returns the number of new lines written.
    int record(const std::vector<SignedRecord> &records);
    [[nodiscard]] long long linesWritten() const { return m_lines; }

private:
    std::FILE *m_file = nullptr;
    std::map<std::string, long> m_lastStep; // per peer id
    long long m_lines = 0;
};

} // namespace dedloc
