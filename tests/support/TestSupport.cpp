#include "TestSupport.h"

#include "util/AtomicFile.h"

namespace dedloc::test {

std::filesystem::path sourceResources() { return DEDLOC_SOURCE_RESOURCES; }

std::filesystem::path defaultManifest() { return sourceResources() / "default-run" / "manifest.json"; }

void writeCorpusSample(const std::filesystem::path &file, std::size_t bytes)
{
    const std::string all = readWholeFile(sourceResources() / "default-run" / "corpus" / "bn_pd_literature.txt");
    std::size_t end = std::min(bytes, all.size());
    const auto nl = all.rfind('\n', end);
    if (nl != std::string::npos && nl > 0)
        end = nl + 1;
    writeFileAtomically(file, all.substr(0, end));
}

} // namespace dedloc::test
