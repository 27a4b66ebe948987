#pragma once
// Fixtures shared by the test suites.
#include <filesystem>
#include <string>

namespace dedloc::test {

// resources/ of the source tree (the bundled default run lives in resources/default-run).
[[nodiscard]] std::filesystem::path sourceResources();
// resources/default-run/manifest.json
[[nodiscard]] std::filesystem::path defaultManifest();
// Writes the first `bytes` of the bundled Bengali corpus (cut at a line end) to `file`.
void writeCorpusSample(const std::filesystem::path &file, std::size_t bytes);

} // namespace dedloc::test
