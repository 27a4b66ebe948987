#pragma once
// Appends whole lines (JSON lines, CSV rows) to a file that `tail -f` and a crash both see line by
// line. Every append() goes straight to the file with write(2), without a user-space buffer, so a
// failed append leaves nothing behind that could come out later beside its retry; a write cut
// short (the disk filled up halfway through a line) is cut off the file again, so the file holds
// whole lines only.
// Errors: open() throws dedloc::Error naming the file or directory and what it is for; append()
// never throws: it returns false and keeps the reason ("cannot append to <file>: No space left on
// device") for the caller, which decides whether to retry, log or drop.
// Threads: one appender per file, used by one thread at a time; nothing is synchronised.
#include <filesystem>
#include <string>
#include <string_view>

namespace dedloc {

class LineAppender final {
  public:
    LineAppender() = default; // closed
    ~LineAppender();
    LineAppender(const LineAppender &) = delete;
    LineAppender &operator=(const LineAppender &) = delete;

    // Creates the missing parent directories of `file`, then opens it for appending (created if
    // absent, close-on-exec); what was open before is closed first. Throws dedloc::Error
    // "cannot create <dir> for <purpose>: ..." or "cannot open <file> for <purpose>: ...".
    // An empty path leaves the appender closed: the caller's "write nothing".
    void open(const std::filesystem::path &file, const std::string &purpose);
    void close();
    [[nodiscard]] bool isOpen() const { return m_fd >= 0; }
    [[nodiscard]] const std::filesystem::path &path() const { return m_path; }

    // Writes `line` (the caller ends it with '\n') at the end of the file. True when all of it is
    // there, or when the appender is closed (nothing to write). False when the write fails:
    // lastError() and lastErrno() say why, and a regular file is cut back to its size before the
    // call (a device such as /dev/full cannot be cut, but takes nothing either).
    [[nodiscard]] bool append(std::string_view line);
    // The last append()'s failure as a sentence; empty after a successful one.
    [[nodiscard]] const std::string &lastError() const { return m_lastError; }
    // The errno of the last failed append(); 0 after a successful one.
    [[nodiscard]] int lastErrno() const { return m_lastErrno; }

  private:
    std::filesystem::path m_path;
    int m_fd = -1;
    std::string m_lastError;
    int m_lastErrno = 0;
};

} // namespace dedloc
