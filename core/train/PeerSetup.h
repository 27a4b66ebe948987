#pragma once
// What the solo session (train/TrainingSession.h) and a swarm peer (peer/SwarmPeer.h) do alike
// before they train: load the run manifest, check its files against their SHA-256, load the
// tokenizer, build the trainer with this peer's data seed, and continue from the newest good
// checkpoint in the run's directory (run/RunPaths.h runDataDir).
//
// Torch-free header. Errors: dedloc::Error (manifest, run files, tokenizer, a checkpoint of
// another run). Runs on the calling thread.
#include "model/Tokenizer.h"
#include "run/RunManifest.h"
#include "train/Trainer.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

namespace dedloc {

class PeerIdentity;

// Each peer shuffles and masks with a seed from its key (as in the sahajBERT run): the first 16
// hex digits of the peer id, read as a 64-bit number.
[[nodiscard]] std::uint64_t seedFromPeerId(const std::string &peerId);

struct LoadedRun {
    RunManifest manifest;
    std::unique_ptr<Tokenizer> tokenizer;
};

// Loads and verifies the run (manifest, its files, the tokenizer).
[[nodiscard]] LoadedRun loadVerifiedRun(const std::filesystem::path &manifestFile);

// Builds the trainer. `config.seed` 0: seedFromPeerId(identity). With `resume`, restores the
// newest good checkpoint of `checkpointDir` and logs "<what> from step N" under `logTag`.
// `manifest` and `tokenizer` must outlive the trainer.
[[nodiscard]] std::unique_ptr<Trainer> startTrainer(const RunManifest &manifest, const Tokenizer &tokenizer,
                                                    const PeerIdentity &identity, TrainerConfig config,
                                                    const std::filesystem::path &checkpointDir, bool resume,
                                                    const char *logTag);

// Saves a checkpoint and logs where; a failure (full disk) is logged as an error and training goes
// on (the previous checkpoint stays intact). Returns whether it was saved. `feedbackResidual`: as
// Trainer::saveCheckpoint.
bool saveCheckpointOrWarn(Trainer &trainer, const std::filesystem::path &checkpointDir,
                          std::span<const float> feedbackResidual = {});

} // namespace dedloc
