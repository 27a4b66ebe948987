#include "RunInfo.h"

#include "run/RunManifest.h"

#include <filesystem>

namespace dedloc::ui {

RunInfo runInfoFromManifest(const RunManifest &m)
{
    RunInfo r;
    r.runId = m.runId;
    r.name = m.name;
    r.lead = m.lead;
    r.description = m.description;
    r.model = "ALBERT " + m.model.preset + " (hidden " + std::to_string(m.model.hiddenSize) + ", " +
              std::to_string(m.model.numLayers) + " layers, vocabulary " + std::to_string(m.model.vocabSize) +
              "), target batch " + std::to_string(m.training.targetBatchSize) + " samples";
    for (const auto &f : m.corpus.files) {
        if (!r.data.empty())
            r.data += ", ";
        r.data += std::filesystem::path(f.path).filename().string();
    }
    return r;
}

} // namespace dedloc::ui
