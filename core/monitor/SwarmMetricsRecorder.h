#pragma once
// The monitor's metrics recorder: every peer publishes its latest step metrics under
// runKey(run, "metrics"); the monitor reads them every progress period and appends each
// (peer, step) it has not written yet as one JSON line (the peer's fields plus "recorded_at")
// and, when a CSV file is given, as one CSV row of the fixed columns (monitor/MetricsCsv.h).
// Lines are flushed one by one (`tail -f` works). Records whose payload is not a JSON object
// with an integer "step" are skipped with a logged reason.
// Bounds (any peer of an open run may publish metrics): a record's payload is at most
// MaxMetricsRecordBytes (an honest step's metrics take well under 1 KiB) and at most
// MaxRecordedPeers distinct peers are recorded; others are skipped with a logged reason.
// A failed write (full disk) is logged, kept in stats().lastError, and that file tries the same
// (peer, step) again at the next read while the DHT still holds it; the other file goes on.
// Every (peer, step) recorded adds the step's "samples" to the peer's credit (CreditLedger.h),
// and the earlier steps the record lists under "steps" ([[step, samples], ...]: those the peer
// took between two publications) that the ledger does not have yet.
// Downstream evaluations (eval/DownstreamEvaluation.h) are recorded by recordEvaluation(): one
// JSON line with "event": "evaluation" in the same file, and one row of evaluation.csv's columns
// (monitor/MetricsCsv.h) when that file is given.
// Thread-safety: record() from one thread (the control thread), recordEvaluation() from one
// (the evaluation worker); the const accessors from any.
#include "monitor/CreditLedger.h"
#include "monitor/MetricsCsv.h"
#include "net/DhtNode.h"
#include "util/LineAppender.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dedloc {

inline constexpr std::size_t MaxMetricsRecordBytes = 4096;
inline constexpr std::size_t MaxRecordedPeers = 4096;

struct RecorderStats {
    long long rows = 0;          // (peer, step) rows recorded (JSON lines written)
    long long csvRows = 0;       // CSV rows written
    std::size_t peers = 0;       // distinct peers with at least one row
    double lastRecordedAt = 0.0; // Unix seconds of the newest row; 0: none
    std::string lastError;       // the last write failure, empty once a write succeeds again
};

class SwarmMetricsRecorder final {
public:
    // Empty paths record nothing (but still count). Throws dedloc::Error if a file cannot be
    // opened or its directory created, or the CSV file has another version's columns.
    explicit SwarmMetricsRecorder(const std::filesystem::path &jsonLines, const std::filesystem::path &csv = {},
                                  const std::filesystem::path &evaluationCsv = {});
    ~SwarmMetricsRecorder();
    SwarmMetricsRecorder(const SwarmMetricsRecorder &) = delete;
    SwarmMetricsRecorder &operator=(const SwarmMetricsRecorder &) = delete;

    // Returns the number of new rows recorded.
    int record(const std::vector<SignedRecord> &records);
    [[nodiscard]] long long linesWritten() const;
    [[nodiscard]] RecorderStats stats() const;
    // The newest recorded metrics object of every peer (as written to the JSON lines).
    [[nodiscard]] std::map<std::string, nlohmann::json> latestByPeer() const;
    // Appends an evaluation result (an object; "event" and "recorded_at" are added) to the JSON
    // lines and the evaluation CSV. Returns false if a write failed (logged, in stats().lastError).
    bool recordEvaluation(nlohmann::json result);
    // The newest evaluation recorded; null if none.
    [[nodiscard]] nlohmann::json latestEvaluation() const;
    // The credit records (CreditLedger.h) of up to `most` peers whose credit changed since the
    // last call, as (peer id, JSON payload): what the monitor publishes.
    [[nodiscard]] std::vector<std::pair<std::string, std::string>> takeChangedCredit(std::size_t most);

private:
    bool writeJsonLine(const std::string &line);
    void creditSteps(const std::string &peerId, long step, const nlohmann::json &metrics);

    LineAppender m_json;
    std::unique_ptr<MetricsCsvWriter> m_csv;
    std::unique_ptr<MetricsCsvWriter> m_evaluationCsv;
    mutable std::mutex m_mutex; // guards everything below (record() writes, accessors read)
    std::map<std::string, long> m_lastJsonStep; // per peer id
    std::map<std::string, long> m_lastCsvStep;  // per peer id
    std::map<std::string, nlohmann::json> m_latest;
    nlohmann::json m_latestEvaluation;
    CreditLedger m_credit;
    RecorderStats m_stats;
};

} // namespace dedloc
