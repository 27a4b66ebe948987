#pragma once
// Files through which a benchmark's processes meet (they share the file system, not always a
// network namespace): atomic writes, whole-file reads, and a barrier of N processes.
#include <filesystem>
#include <string>

namespace dedloc::bench {

// Writes `text` to `p` through a temporary file and a rename, so that readers see all or nothing.
void writeFile(const std::filesystem::path &p, const std::string &text);
// The whole file, "" if it cannot be read.
[[nodiscard]] std::string readFile(const std::filesystem::path &p);
// Writes <dir>/<name>.<rank> with `content`, then waits until all `n` ranks have written theirs.
void barrier(const std::filesystem::path &dir, const std::string &name, int rank, int n,
             const std::string &content = "x");
// Waits until `p` exists, at most `timeoutSeconds` (< 0: without limit); returns whether it does.
bool waitForFile(const std::filesystem::path &p, double timeoutSeconds = -1.0);

} // namespace dedloc::bench
