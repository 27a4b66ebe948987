#pragma once
// Fixtures shared by the test suites.
#include "run/RunManifest.h"

#include <QString>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace dedloc::test {

// resources/ of the source tree (the bundled default run lives in resources/default-run).
[[nodiscard]] std::filesystem::path sourceResources();
// resources/default-run/manifest.json
[[nodiscard]] std::filesystem::path defaultManifest();
// Writes the first `bytes` of the bundled Bengali corpus (cut at a line end) to `file`.
void writeCorpusSample(const std::filesystem::path &file, std::size_t bytes);

// The lines of a text file, without their line ends (none if it cannot be read).
[[nodiscard]] std::vector<std::string> readLines(const std::filesystem::path &file);

// The message of the dedloc::Error that `f` throws, or a text that no test expects
// ("<no exception>", or "NOT A dedloc::Error: ..." for any other exception).
[[nodiscard]] QString errorOf(const std::function<void()> &f);

// A tiny-preset run over the first `corpusBytes` of the bundled corpus (written into `dir`), with
// the bundled tokenizer: sequence length 64, target batch 32, micro-batch 16, LAMB lr 0.02 with
// 5 warm-up steps of 200. Hashes are filled in, so verifyRunFiles() passes.
[[nodiscard]] RunManifest tinyRun(const std::filesystem::path &dir, std::size_t corpusBytes = 400000);

// ||a - b|| / ||b|| (L2 over the elements; a and b the same size): how far a flat vector is from
// a reference; +inf when the reference is zero.
[[nodiscard]] double relativeDifference(const std::vector<float> &a, const std::vector<float> &b);

} // namespace dedloc::test
