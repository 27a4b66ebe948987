#pragma once
// Downstream evaluation of a run's checkpoint, the one entry point of the command line and of
// the monitor: fine-tune the checkpoint's encoder with a classification head on a labelled
// text set and score it (eval/FineTune.h), and, as a control, the same from the random
// initialisation with the same seed (same head initialisation, same batch order), so that the
// difference measures what pretraining contributed (Devlin et al. 2019 section 4; the
// from-scratch baseline of Lan et al. 2020).
//
// The manifest gives the model's shape and the tokenizer (manifest.tokenizer, checked against its
// SHA-256). The checkpoint is a trainer's or the monitor's (train/Checkpoint.h); its tensors must
// fit the manifest's shape, its run id may differ (a lead may evaluate a checkpoint of a run
// with the same shape and tokenizer).
//
// Threads: runs on the calling thread for the whole fine-tuning (tens of seconds to minutes on
// a CPU; FineTune.h "Cost"); call it from a worker thread, never the GUI's. Torch's global
// generator is re-seeded. Errors: dedloc::Error for an unreadable or corrupt checkpoint, one whose
// tensors do not fit the shape, a tokenizer that does not match the manifest, a bad task
// directory (eval/LabelledText.h) or bad options.
// This header is torch-free.
#include "eval/FineTune.h"
#include "run/RunManifest.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace dedloc {

struct DownstreamOptions {
    FineTuneOptions fineTune;
    bool control = true; // also fine-tune from the random initialisation
};

struct DownstreamResult {
    std::string task; // the task directory's name, e.g. "bn_sib200_topic"
    std::vector<std::string> labels;
    std::size_t trainExamples = 0; // sentences of the train split fine-tuned on
    std::optional<std::filesystem::path> checkpoint;
    std::optional<long> epoch;            // the checkpoint's "step" (a swarm's global epoch)
    std::optional<long long> peerSamples; // samples the saving peer computed ("contribution")
    std::string runId;                    // the checkpoint's "run_id" ("" if it has none)
    // Fine-tuned from the checkpoint; from the random initialisation when there is none.
    FineTuneResult pretrained;
    // From the random initialisation with the same seed; absent without a checkpoint (it would
    // repeat `pretrained`) or when DownstreamOptions::control is false.
    std::optional<FineTuneResult> control;
    FineTuneOptions options;
    double seconds = 0.0; // the whole evaluation, reading files included

    // {"task", "labels", "checkpoint", "epoch", "peer_samples", "run_id", "options": {...},
    //  "pretrained": {"test": {"accuracy", "macro_f1", "examples", "per_label": [...]}, "dev": ...,
    //  "steps", "train_loss", "seconds"}, "control": ... or null, "seconds"}; absent optionals
    // are null. Scores are fractions in [0, 1].
    [[nodiscard]] nlohmann::json toJson() const;
};

[[nodiscard]] DownstreamResult evaluateDownstream(const RunManifest &manifest,
                                                  const std::optional<std::filesystem::path> &checkpoint,
                                                  const std::filesystem::path &taskDirectory,
                                                  const DownstreamOptions &options);

} // namespace dedloc
