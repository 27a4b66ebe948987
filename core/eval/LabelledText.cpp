#include "eval/LabelledText.h"

#include "util/AtomicFile.h"
#include "util/Error.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace dedloc {

namespace {

namespace fs = std::filesystem;

// A cursor over one file's bytes that counts lines and words its errors as "<file>:<line>: ".
class TsvScanner final {
  public:
    TsvScanner(std::string_view text, const std::string &fileName) : m_text(text), m_file(fileName)
    {
        if (m_text.starts_with("\xEF\xBB\xBF"))
            m_pos = 3;
    }

    [[nodiscard]] bool atEnd() const { return m_pos >= m_text.size(); }
    [[nodiscard]] int line() const { return m_line; }

    // One record from the cursor; the cursor ends after its line break.
    TsvRecord record()
    {
        TsvRecord r{m_line, {}};
        for (;;) {
            r.fields.push_back(atQuote() ? quotedField() : unquotedField());
            if (atEnd())
                return r;
            if (m_text[m_pos] == '\t') {
                ++m_pos;
                continue;
            }
            skipLineBreak();
            return r;
        }
    }

  private:
    [[noreturn]] void fail(int line, const std::string &what) const
    {
        throw Error(m_file + ":" + std::to_string(line) + ": " + what);
    }

    [[nodiscard]] bool atQuote() const { return !atEnd() && m_text[m_pos] == '"'; }
    [[nodiscard]] bool atLineBreak() const
    {
        return m_text[m_pos] == '\n' ||
               (m_text[m_pos] == '\r' && m_pos + 1 < m_text.size() && m_text[m_pos + 1] == '\n');
    }
    void skipLineBreak()
    {
        m_pos += m_text[m_pos] == '\r' ? 2 : 1;
        ++m_line;
    }

    std::string unquotedField()
    {
        const auto start = m_pos;
        while (!atEnd() && m_text[m_pos] != '\t' && !atLineBreak()) {
            if (m_text[m_pos] == '"')
                fail(m_line, "a quote inside an unquoted field (quote the whole field and write \" as \"\")");
            ++m_pos;
        }
        return std::string(m_text.substr(start, m_pos - start));
    }

    std::string quotedField()
    {
        const int openedOn = m_line;
        std::string out;
        ++m_pos; // the opening quote
        for (;;) {
            if (atEnd())
                fail(openedOn, "a quoted field is never closed");
            const char c = m_text[m_pos++];
            if (c == '"') {
                if (atQuote()) {
                    out.push_back('"');
                    ++m_pos;
                    continue;
                }
                break;
            }
            if (c == '\n')
                ++m_line;
            out.push_back(c);
        }
        if (!atEnd() && m_text[m_pos] != '\t' && !atLineBreak())
            fail(m_line, "text after the closing quote of a field (write \" inside a quoted field as \"\")");
        return out;
    }

    std::string_view m_text;
    std::string m_file;
    std::size_t m_pos = 0;
    int m_line = 1;
};

bool isBlank(const TsvRecord &r)
{
    return r.fields.size() == 1 && r.fields[0].empty();
}

std::string trimmed(std::string s)
{
    const auto notSpace = [](unsigned char c) { return c != ' ' && c != '\t' && c != '\r' && c != '\n'; };
    s.erase(s.begin(), std::find_if(s.begin(), s.end(), notSpace));
    s.erase(std::find_if(s.rbegin(), s.rend(), notSpace).base(), s.end());
    return s;
}

struct RawExample {
    std::string text, label;
    int line = 0;
};

std::size_t columnIndex(const TsvRecord &header, const std::vector<std::string> &names, const std::string &file)
{
    for (const auto &name : names) {
        const auto it = std::find(header.fields.begin(), header.fields.end(), name);
        if (it != header.fields.end())
            return static_cast<std::size_t>(it - header.fields.begin());
    }
    std::string wanted = "\"" + names[0] + "\"";
    for (std::size_t i = 1; i < names.size(); ++i)
        wanted += " or \"" + names[i] + "\"";
    throw Error(file + ":" + std::to_string(header.line) + ": the header has no column " + wanted);
}

// The examples of one split, labels still as text. Empty if the file is absent and optional.
std::optional<std::vector<RawExample>> readSplit(const fs::path &file, bool required)
{
    if (!fs::exists(file)) {
        if (required)
            throw Error(file.string() + ": missing (a task directory needs train.tsv and test.tsv)");
        return std::nullopt;
    }
    const auto records = parseTsv(readWholeFile(file), file.string());
    if (records.empty())
        throw Error(file.string() + ": empty (no header row)");
    const auto &header = records.front();
    const auto textColumn = columnIndex(header, {"text"}, file.string());
    const auto labelColumn = columnIndex(header, {"category", "label"}, file.string());
    std::vector<RawExample> out;
    for (std::size_t i = 1; i < records.size(); ++i) {
        const auto &r = records[i];
        if (r.fields.size() != header.fields.size())
            throw Error(file.string() + ":" + std::to_string(r.line) + ": " + std::to_string(r.fields.size()) +
                        " fields, the header has " + std::to_string(header.fields.size()));
        out.push_back({r.fields[textColumn], r.fields[labelColumn], r.line});
    }
    if (out.empty())
        throw Error(file.string() + ": no examples (only a header row)");
    return out;
}

std::vector<std::string> readLabelList(const fs::path &file)
{
    std::vector<std::string> labels;
    std::set<std::string> seen;
    int line = 0;
    const std::string all = readWholeFile(file);
    std::size_t start = 0;
    while (start < all.size()) {
        auto end = all.find('\n', start);
        if (end == std::string::npos)
            end = all.size();
        ++line;
        auto label = trimmed(all.substr(start, end - start));
        start = end + 1;
        if (label.empty())
            continue;
        if (!seen.insert(label).second)
            throw Error(file.string() + ":" + std::to_string(line) + ": label \"" + label + "\" is listed twice");
        labels.push_back(std::move(label));
    }
    if (labels.empty())
        throw Error(file.string() + ": no labels");
    return labels;
}

std::vector<LabelledExample> withLabelIds(const std::vector<RawExample> &raw, const std::map<std::string, int> &ids,
                                          const fs::path &file, const std::string &labelSource)
{
    std::vector<LabelledExample> out;
    out.reserve(raw.size());
    for (const auto &e : raw) {
        const auto it = ids.find(e.label);
        if (it == ids.end())
            throw Error(file.string() + ":" + std::to_string(e.line) + ": label \"" + e.label + "\" is not among " +
                        labelSource);
        out.push_back({e.text, it->second, e.line});
    }
    return out;
}

} // namespace

std::vector<TsvRecord> parseTsv(std::string_view text, const std::string &fileName)
{
    TsvScanner scanner(text, fileName);
    std::vector<TsvRecord> records;
    while (!scanner.atEnd()) {
        auto r = scanner.record();
        if (!isBlank(r))
            records.push_back(std::move(r));
    }
    return records;
}

LabelledTextSet readLabelledTextSet(const std::filesystem::path &directory)
{
    if (!fs::is_directory(directory))
        throw Error(directory.string() + ": not a task directory (it does not exist or is not a directory)");
    LabelledTextSet set;
    set.directory = directory;
    const auto train = *readSplit(directory / "train.tsv", true);
    const auto test = *readSplit(directory / "test.tsv", true);
    const auto dev = readSplit(directory / "dev.tsv", false);

    const auto labelFile = directory / "labels.txt";
    std::string labelSource;
    if (fs::exists(labelFile)) {
        set.labels = readLabelList(labelFile);
        labelSource = "the labels of " + labelFile.string();
    } else {
        std::set<std::string> distinct;
        for (const auto &e : train)
            distinct.insert(e.label);
        set.labels.assign(distinct.begin(), distinct.end());
        labelSource = "the labels of " + (directory / "train.tsv").string();
    }
    std::map<std::string, int> ids;
    for (std::size_t i = 0; i < set.labels.size(); ++i)
        ids[set.labels[i]] = static_cast<int>(i);
    set.train = withLabelIds(train, ids, directory / "train.tsv", labelSource);
    set.test = withLabelIds(test, ids, directory / "test.tsv", labelSource);
    if (dev)
        set.dev = withLabelIds(*dev, ids, directory / "dev.tsv", labelSource);
    return set;
}

} // namespace dedloc
