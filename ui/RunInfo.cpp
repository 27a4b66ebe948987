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
    r.access = m.closed ? "closed: only volunteers with an access token from the lead"
                        : "open: anyone may join (every link is encrypted)";
    for (const auto &f : m.corpus.files) {
        if (!r.data.empty())
            r.data += ", ";
        r.data += std::filesystem::path(f.path).filename().string();
    }
    return r;
}

std::string closedRunAccessText(const std::string &tokenPath, bool tokenFileExists)
{
    if (tokenFileExists)
        return "closed: only volunteers with an access token from the lead. Your token: " + tokenPath;
    return "closed: only volunteers with an access token from the lead. You have none yet: send your peer key "
           "(dedloc --print-peer-key) to the lead and save the token you get as " + tokenPath;
}

} // namespace dedloc::ui
