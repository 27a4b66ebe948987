#pragma once
// A labelled text classification task on disk, as downstream evaluation reads it (the bundled
// one: resources/default-run/eval/bn_sib200_topic, SIB-200 Bengali, Adelani et al. 2024).
//
// A task directory holds
//   train.tsv, test.tsv       required
//   dev.tsv                   optional
//   labels.txt                optional: one label per line; its order gives the label ids
// Each .tsv is UTF-8 (a leading byte-order mark is skipped) with a header row. The text column
// is named `text`; the label column `category` or, failing that, `label`; other columns are
// ignored. Fields follow RFC 4180 with TAB instead of comma as the separator: a field that
// starts with `"` is quoted, may hold tabs and line breaks, and writes `"` as `""`; records end
// in LF or CRLF; blank lines are skipped. Without labels.txt the labels are the distinct train
// labels in byte-wise sorted order.
//
// Errors: dedloc::Error whose message starts with "<file>:<line>: " (or "<file>: " for a
// file-level fault) for a missing file, a missing column, a record with the wrong number of
// fields, bad quoting (text after a closing quote, a quote inside an unquoted field, a quoted
// field never closed), a label that is not among the labels (labels.txt's, or train's for dev
// and test), a duplicate label in labels.txt and a split without examples.
// Torch-free; no shared state (call from any thread).
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace dedloc {

struct LabelledExample {
    std::string text;
    int label = 0; // index into LabelledTextSet::labels
    int line = 0;  // line of the file where the record starts (1 = the header)
};

struct LabelledTextSet {
    std::filesystem::path directory;
    std::vector<std::string> labels;               // label id -> name
    std::vector<LabelledExample> train, dev, test; // dev is empty when dev.tsv is absent
};

// One record of a TSV file: its fields and the line it starts on (1-based).
struct TsvRecord {
    int line = 0;
    std::vector<std::string> fields;
};

// Parses `text` (a whole file's bytes) as above; `fileName` prefixes error messages.
[[nodiscard]] std::vector<TsvRecord> parseTsv(std::string_view text, const std::string &fileName);

// Reads a task directory as above. Throws dedloc::Error.
[[nodiscard]] LabelledTextSet readLabelledTextSet(const std::filesystem::path &directory);

} // namespace dedloc
