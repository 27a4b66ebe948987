#include "train/TrainingSession.h"

#include "net/PeerIdentity.h"
#include "run/RunPaths.h"
#include "system/TorchRuntime.h"
#include "train/MetricsWriter.h"
#include "train/PeerSetup.h"
#include "train/StepLine.h"
#include "util/Error.h"
#include "util/Log.h"

#include <chrono>
#include <cmath>

namespace dedloc {

int runTrainingSession(const SessionOptions &options, const std::atomic<bool> &stop)
{
    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    try {
        configureTorchThreads(options.threads);
        logRuntime(options.allowCuda);

        const auto run = loadVerifiedRun(options.manifest);
        const RunManifest &manifest = run.manifest;
        log::info("run", "run \"" + manifest.runId + "\" (" + manifest.name + ") by " + manifest.lead);
        const auto identity = PeerIdentity::loadOrCreate(options.dataDir / "identity.key");
        log::info("run", "peer id " + identity.peerId());

        TrainerConfig config;
        config.allowCuda = options.allowCuda;
        const auto checkpointDir = soloDataDir(options.dataDir, manifest.runId);
        const auto trainerOwner = startTrainer(manifest, *run.tokenizer, identity, config, checkpointDir,
                                               options.resume, "run");
        Trainer &trainer = *trainerOwner;
        MetricsWriter metrics(options.metricsOut, identity.peerId(), "trainer");

        const long lastStep = options.maxSteps > 0 ? options.maxSteps : manifest.schedule.totalSteps;
        const auto &t = manifest.training;
        auto validate = [&] {
            const double v = trainer.validationLoss();
            printLine(options.statusOut, validationLine("", trainer.step(), v));
            metrics.write("validation", {{"step", trainer.step()}, {"val_loss", v}});
        };
        if (trainer.step() == 0)
            validate();
        long stepsSinceCheckpoint = 0;
        while (!stop.load() && trainer.step() < lastStep) {
            if (options.durationSeconds > 0
                && std::chrono::duration<double>(Clock::now() - started).count() >= options.durationSeconds)
                break;
            const auto r = trainer.trainStep(&stop);
            if (!r.applied && r.skipReason == "interrupted")
                break;
            StepLineFields line;
            line.step = r.step;
            line.loss = r.loss;
            line.samplesPerSecond = r.samplesPerSecond;
            line.learningRate = r.learningRate;
            line.gradNorm = r.gradNorm;
            line.applied = r.applied;
            printLine(options.statusOut, stepLine(line));
            metrics.write("step", {{"step", r.step}, {"samples", r.samples}, {"loss", r.loss},
                                   {"samples_per_s", r.samplesPerSecond}, {"lr", r.learningRate},
                                   {"grad_norm", std::isfinite(r.gradNorm) ? r.gradNorm : -1.0},
                                   {"applied", r.applied}});
            if (r.applied && t.validationEveryNSteps > 0 && r.step % t.validationEveryNSteps == 0)
                validate();
            if (++stepsSinceCheckpoint >= t.checkpointEveryNSteps) {
                saveCheckpointOrWarn(trainer, checkpointDir);
                stepsSinceCheckpoint = 0;
            }
        }
        if (stepsSinceCheckpoint > 0)
            saveCheckpointOrWarn(trainer, checkpointDir);
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
