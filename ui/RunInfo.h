#pragma once
// What the join page shows about the run before the volunteer clicks Join (issue 4 item 2).
// Plain strings so the app can fill it from a RunManifest (runInfoFromManifest) or anything else.
#include <string>

namespace dedloc {
struct RunManifest;
}

namespace dedloc::ui {

struct RunInfo {
    std::string runId; // manifest run_id; remembered for auto-rejoin
    std::string name;  // "Bengali ALBERT (demo)"
    std::string lead;  // who runs it
    std::string description;
    std::string model;                          // "ALBERT default (H256, L4, vocab 8000)"
    std::string data;                           // "bn_pd_literature.txt (5.5 MB)"
    std::string signatureStatus = "not checked"; // the app sets the result of its signature check
};

// Fills a RunInfo from a parsed manifest (model shape, corpus file names; signature "not checked").
[[nodiscard]] RunInfo runInfoFromManifest(const RunManifest &manifest);

} // namespace dedloc::ui
