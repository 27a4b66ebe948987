#pragma once
// What the join page shows about the run before the volunteer clicks Join.
// Plain strings so the app can fill it from a RunManifest (runInfoFromManifest) or anything else.
// The texts this unit writes (model line, access) are in the window's language installed when
// they are made (Language.h): the app installs it before calling these for them to be Bengali.
// The join page looks the fixed ones ("not checked", open, closed without a token) up again
// (runInfoText), so those follow the window's language even when made earlier.
// Threads: any thread (they only read the application's translators).
#include <QString>

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
    std::string access;                          // open or closed (manifest "access"); the app adds
                                                 // where the volunteer's access token is, or how to get one
};

// The join page's access line for a closed run, given where the volunteer's token is expected
// and whether a file is there (the token itself is checked at Join, against the lead's key).
[[nodiscard]] std::string closedRunAccessText(const std::string &tokenPath, bool tokenFileExists);

// Fills a RunInfo from a parsed manifest (model shape, corpus file names, open or closed;
// signature "not checked").
[[nodiscard]] RunInfo runInfoFromManifest(const RunManifest &manifest);

// A RunInfo text as the join page shows it: a fixed text of this unit that was made in English
// (before a translation was installed) in the window's language; anything else as it is.
[[nodiscard]] QString runInfoText(const std::string &value);

} // namespace dedloc::ui
