#include "monitor/MetricsCsv.h"

#include "util/Error.h"

#include <fstream>

namespace dedloc {

const std::vector<std::string> &metricsCsvColumns()
{
    // Append only: dashboards address columns by name, scripts often by position.
    static const std::vector<std::string> columns = {
        "recorded_at", "time",          "peer_id",    "name",          "role",    "step",           "global_epoch",
        "samples",     "batch_samples", "loss",       "samples_per_s", "lr",      "grad_norm",      "applied",
        "averaged",    "complete",      "group_size", "peers",         "round_s", "shard_elements", "params_sha",
        "val_loss",
    };
    return columns;
}

const std::vector<std::string> &evaluationCsvColumns()
{
    static const std::vector<std::string> columns = {
        "recorded_at",  "step",     "task",         "train_examples",   "test_examples",    "accuracy",
        "macro_f1",     "dev_accuracy", "control_accuracy", "control_macro_f1", "seconds",
    };
    return columns;
}

namespace {

std::string headerOf(const std::vector<std::string> &columns)
{
    std::string out;
    for (const auto &c : columns) {
        if (!out.empty())
            out += ',';
        out += c;
    }
    return out;
}

std::string quoteIfNeeded(std::string text)
{
    if (!text.empty() &&
        (text[0] == '=' || text[0] == '+' || text[0] == '-' || text[0] == '@' || text[0] == '\t' || text[0] == '\r'))
        text.insert(text.begin(), '\'');
    if (text.find_first_of(",\"\r\n") == std::string::npos)
        return text;
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"')
            out += '"';
        out += c;
    }
    out += '"';
    return out;
}

} // namespace

std::string metricsCsvHeader()
{
    return headerOf(metricsCsvColumns());
}

std::string csvCell(const nlohmann::json &value)
{
    if (value.is_null())
        return {};
    if (value.is_string())
        return quoteIfNeeded(value.get<std::string>());
    if (value.is_boolean())
        return value.get<bool>() ? "true" : "false";
    if (value.is_number())
        return value.dump();
    // An object or array where a scalar belongs: keep it readable, as quoted JSON text.
    return quoteIfNeeded(value.dump());
}

std::string metricsCsvRow(const nlohmann::json &fields)
{
    return csvRow(metricsCsvColumns(), fields);
}

std::string csvRow(const std::vector<std::string> &columns, const nlohmann::json &fields)
{
    std::string out;
    bool first = true;
    for (const auto &c : columns) {
        if (!first)
            out += ',';
        first = false;
        if (fields.is_object())
            if (const auto it = fields.find(c); it != fields.end())
                out += csvCell(*it);
    }
    return out;
}

MetricsCsvWriter::MetricsCsvWriter(const std::filesystem::path &file, const std::vector<std::string> &columns)
    : m_columns(columns)
{
    if (file.empty())
        return;
    const auto header = headerOf(m_columns);
    bool writeHeader = true;
    std::error_code ec;
    if (std::filesystem::exists(file, ec) && std::filesystem::file_size(file, ec) > 0 && !ec) {
        std::ifstream in(file);
        std::string first;
        std::getline(in, first);
        if (first != header)
            throw Error(file.string() + " has other CSV columns than this version writes (another version's file?); "
                                        "move it away or choose another metrics directory");
        writeHeader = false;
    }
    m_out.open(file, "the CSV metrics");
    if (writeHeader && !m_out.append(header + "\n")) {
        const int e = m_out.lastErrno();
        m_out.close();
        throw Error(systemErrorText("cannot write the CSV header to " + file.string(), e));
    }
}

MetricsCsvWriter::~MetricsCsvWriter() = default;

bool MetricsCsvWriter::write(const nlohmann::json &fields)
{
    return m_out.append(csvRow(m_columns, fields) + "\n");
}

} // namespace dedloc
