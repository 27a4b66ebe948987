#include "train/PeerSetup.h"

#include "net/PeerIdentity.h"
#include "util/Error.h"
#include "util/Log.h"

namespace dedloc {

std::uint64_t seedFromPeerId(const std::string &peerId)
{
    return std::stoull(peerId.substr(0, 16), nullptr, 16);
}

LoadedRun loadVerifiedRun(const std::filesystem::path &manifestFile)
{
    LoadedRun run;
    run.manifest = loadRunManifest(manifestFile);
    verifyRunFiles(run.manifest);
    run.tokenizer = std::make_unique<Tokenizer>(run.manifest.resolve(run.manifest.tokenizer.path));
    return run;
}

std::unique_ptr<Trainer> startTrainer(const RunManifest &manifest, const Tokenizer &tokenizer,
                                      const PeerIdentity &identity, TrainerConfig config,
                                      const std::filesystem::path &checkpointDir, bool resume, const char *logTag)
{
    if (config.seed == 0)
        config.seed = seedFromPeerId(identity.peerId());
    auto trainer = std::make_unique<Trainer>(manifest, tokenizer, config);
    if (resume)
        if (const auto step = trainer->restoreCheckpoint(checkpointDir))
            log::info(logTag, "continuing from step " + std::to_string(*step));
    return trainer;
}

bool saveCheckpointOrWarn(Trainer &trainer, const std::filesystem::path &checkpointDir,
                          std::span<const float> feedbackResidual)
{
    try {
        trainer.saveCheckpoint(checkpointDir, feedbackResidual);
        log::info("ckpt", "checkpoint at step " + std::to_string(trainer.step()) + " saved in " + checkpointDir.string());
        return true;
    } catch (const Error &e) {
        log::error("ckpt", std::string("checkpoint not saved: ") + e.what() + "; training continues");
        return false;
    }
}

} // namespace dedloc
