#pragma once
// The swarm's step metrics as CSV, for spreadsheets and plotting tools that do not read JSON
// lines. One row per (peer, step) the monitor records (monitor/SwarmMetricsRecorder.h), with a fixed,
// documented column set (docs/METRICS.md "CSV"): a file written by this version always has
// the same header, whatever fields the peers sent. Later versions only append columns.
//
// Cells: RFC 4180 quoting (a cell with , " CR or LF is quoted, quotes doubled); a missing or
// null field is an empty cell; booleans are true/false; numbers as JSON writes them (shortest
// form that reads back the same double). Text that a spreadsheet would run as a formula (it
// starts with = + - @ TAB or CR; peers choose their own names) gets a leading ' so it stays text.
// Lines end with LF.
//
// Thread-safety: one writer per file, used from one thread.
#include "util/LineAppender.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace dedloc {

// The column names of the step metrics file (swarm.csv), in file order.
[[nodiscard]] const std::vector<std::string> &metricsCsvColumns();
// The column names of the downstream evaluation file (evaluation.csv), in file order: one row
// per checkpoint the monitor evaluated (eval/DownstreamEvaluation.h); append only too.
[[nodiscard]] const std::vector<std::string> &evaluationCsvColumns();
// The header line (column names joined by commas), without the line end.
[[nodiscard]] std::string metricsCsvHeader();
// One cell for a JSON value (see above).
[[nodiscard]] std::string csvCell(const nlohmann::json &value);
// One row (no line end) for an object: its fields in the order of `columns`; fields that are
// not columns are left out (they stay in the JSON lines).
[[nodiscard]] std::string csvRow(const std::vector<std::string> &columns, const nlohmann::json &fields);
// csvRow of the step metrics columns.
[[nodiscard]] std::string metricsCsvRow(const nlohmann::json &fields);

class MetricsCsvWriter final {
  public:
    // Opens for appending and writes the header if the file is new or empty. A file that
    // starts with another header (another version's columns) is refused rather than mixed:
    // throws dedloc::Error naming the file, as for a file or directory it cannot open/create.
    // An empty path writes nothing.
    explicit MetricsCsvWriter(const std::filesystem::path &file,
                              const std::vector<std::string> &columns = metricsCsvColumns());
    ~MetricsCsvWriter();
    MetricsCsvWriter(const MetricsCsvWriter &) = delete;
    MetricsCsvWriter &operator=(const MetricsCsvWriter &) = delete;

    // Appends one row and flushes. Returns false (and leaves the reason in lastError()) when
    // the write fails (full disk); the caller decides whether to try again.
    bool write(const nlohmann::json &fields);
    [[nodiscard]] const std::string &lastError() const { return m_out.lastError(); }
    [[nodiscard]] const std::filesystem::path &path() const { return m_out.path(); }

  private:
    std::vector<std::string> m_columns;
    LineAppender m_out;
};

} // namespace dedloc
