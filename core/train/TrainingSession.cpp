#include "train/TrainingSession.h"

#include "model/Tokenizer.h"
#include "net/PeerIdentity.h"
#include "run/RunManifest.h"
#include "system/TorchRuntime.h"
#include "train/MetricsWriter.h"
#include "train/Trainer.h"
#include "util/Error.h"
#include "util/Log.h"

#include <chrono>
#include <cmath>

namespace dedloc {

namespace {

std::uint64_t seedFromPeerId(const std::string &peerId)
{
    // Each peer shuffles with a seed from its key, as in the sahajBERT run.
    return std::stoull(peerId.substr(0, 16), nullptr, 16);
}

void trySave(Trainer &trainer, const std::filesystem::path &dir)
{
    try {
        trainer.saveCheckpoint(dir);
        log::info("ckpt", "checkpoint at step " + std::to_string(trainer.step()) + " saved in " + dir.string());
    } catch (const Error &e) {
        // A full disk must not end the session: the previous checkpoint is still intact.
        log::error("ckpt", std::string("checkpoint not saved: ") + e.what() + "; training continues");
    }
}

} // namespace

int runTrainingSession(const SessionOptions &options, const std::atomic<bool> &stop)
{
    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    try {
        configureTorchThreads(options.threads);
        logRuntime(options.allowCuda);

        const RunManifest manifest = loadRunManifest(options.manifest);
        verifyRunFiles(manifest);
        log::info("run", "run \"" + manifest.runId + "\" (" + manifest.name + ") by " + manifest.lead);
        const Tokenizer tokenizer(manifest.resolve(manifest.tokenizer.path));
        const auto identity = PeerIdentity::loadOrCreate(options.dataDir / "identity.key");
        log::info("run", "peer id " + identity.peerId());

        TrainerConfig config;
        config.seed = seedFromPeerId(identity.peerId());
        config.allowCuda = options.allowCuda;
        Trainer trainer(manifest, tokenizer, config);
        const auto checkpointDir = options.dataDir / "runs" / manifest.runId;
        if (options.resume) {
            if (auto step = trainer.restoreCheckpoint(checkpointDir))
                log::info("run", "continuing from step " + std::to_string(*step));
        }
        MetricsWriter metrics(options.metricsOut, identity.peerId(), "trainer");

        const long lastStep = options.maxSteps > 0 ? options.maxSteps : manifest.schedule.totalSteps;
        const auto &t = manifest.training;
        auto validate = [&] {
            const double v = trainer.validationLoss();
            std::fprintf(options.statusOut, "step %6ld | validation loss %.4f\n", trainer.step(), v);
            std::fflush(options.statusOut);
            metrics.write("validation", {{"step", trainer.step()}, {"val_loss", v}});
        };
        if (trainer.step() == 0)
            validate();
        long stepsSinceCheckpoint = 0;
        double emaSamplesPerSecond = 0.0;
        while (!stop.load() && trainer.step() < lastStep) {
            if (options.durationSeconds > 0
                && std::chrono::duration<double>(Clock::now() - started).count() >= options.durationSeconds)
                break;
            const auto r = trainer.trainStep(&stop);
            if (!r.applied && r.skipReason == "interrupted")
                break;
            emaSamplesPerSecond = emaSamplesPerSecond == 0.0 ? r.samplesPerSecond
                                                             : 0.9 * emaSamplesPerSecond + 0.1 * r.samplesPerSecond;
            std::fprintf(options.statusOut, "step %6ld | loss %.4f | %6.1f samples/s | lr %.2e | grad norm %.3f%s\n",
                         r.step, r.loss, r.samplesPerSecond, r.learningRate, r.gradNorm,
                         r.applied ? "" : " | SKIPPED (non-finite)");
            std::fflush(options.statusOut);
            metrics.write("step", {{"step", r.step}, {"samples", r.samples}, {"loss", r.loss},
                                   {"samples_per_s", r.samplesPerSecond}, {"lr", r.learningRate},
                                   {"grad_norm", std::isfinite(r.gradNorm) ? r.gradNorm : -1.0},
                                   {"applied", r.applied}});
            if (r.applied && t.validationEveryNSteps > 0 && r.step % t.validationEveryNSteps == 0)
                validate();
            if (++stepsSinceCheckpoint >= t.checkpointEveryNSteps) {
                trySave(trainer, checkpointDir);
                stepsSinceCheckpoint = 0;
            }
        }
        if (stepsSinceCheckpoint > 0)
            trySave(trainer, checkpointDir);
        const auto c = trainer.contribution();
        log::info("run", "stopped at step " + std::to_string(trainer.step()) + "; contributed "
                             + std::to_string(c.samples) + " samples in " + std::to_string(static_cast<long>(c.computeSeconds))
                             + " s of compute");
        return 0;
    } catch (const Error &e) {
        log::error("run", e.what());
        return 2;
    }
}

} // namespace dedloc
