#pragma once
// Where things live on disk. Nothing here touches the network.
#include <filesystem>
#include <optional>
#include <string>

namespace dedloc {

struct RunManifest;

// The default run's manifest: $DEDLOC_RUN_DIR/manifest.json, else the first of
// <exe dir>/../share/dedloc/default-run, <exe dir>/resources/default-run, the source tree's
// resources/default-run. Empty when none exists.
[[nodiscard]] std::optional<std::filesystem::path> findDefaultManifest();

// Per-user data directory: $DEDLOC_DATA_DIR, else $XDG_DATA_HOME/dedloc, else
// ~/.local/share/dedloc. Created on demand. Holds identity, checkpoints and contribution totals.
[[nodiscard]] std::filesystem::path userDataDir();

// A run's own directory in a data directory: <dataDir>/runs/<runId>. Checkpoints, contribution
// totals and the access token of a closed run live there.
[[nodiscard]] std::filesystem::path runDataDir(const std::filesystem::path &dataDir, const std::string &runId);
// Where a solo session (`dedloc --solo`) keeps its checkpoints: <runDataDir>/solo. Solo and swarm
// never share state: a peer that trained alone does not carry its solo steps into a swarm (whose
// global epoch they would move), and a swarm peer's checkpoint does not become a solo start.
[[nodiscard]] std::filesystem::path soloDataDir(const std::filesystem::path &dataDir, const std::string &runId);

// The run's downstream evaluation task (eval/LabelledText.h): the manifest's evaluation.task,
// resolved against its directory; else the only directory inside <manifest dir>/eval/ when there
// is exactly one (the bundled run ships its task there: its signed manifest predates the
// evaluation section); else empty.
[[nodiscard]] std::optional<std::filesystem::path> defaultEvaluationTask(const RunManifest &manifest);

} // namespace dedloc
