#pragma once
// Making a run (the project lead's side): copy the corpus into the run directory, train the
// SentencePiece tokenizer on it, and write manifest.json with the SHA-256 of every file.
// Used by `dedloc-lead make-run`; the bundled default run in resources/default-run was made so.
#include "run/RunManifest.h"

#include <filesystem>
#include <string>
#include <vector>

namespace dedloc {

struct MakeRunOptions {
    std::vector<std::filesystem::path> corpus; // UTF-8 text, one paragraph per line
    std::filesystem::path outputDir;           // gets manifest.json, tokenizer.model, corpus/
    std::string runId;
    std::string name;
    std::string lead;
    std::string description;
    std::string preset = "default";            // tiny | default | large
    int vocabSize = 8000;
    int sequenceLength = 128;
    int targetBatchSize = 256;
    int microBatchSize = 16;
    double learningRate = 0.00176;             // the sahajBERT run's LAMB rate
    int warmupSteps = 100;
    int totalSteps = 5000;
    double validationFraction = 0.02;
    Compression compression = Compression::Fp16;
    bool retrainTokenizer = true;              // false: keep an existing tokenizer.model
    bool closed = false;                       // "access": "closed": access tokens required
    bool delayedParameterUpdates = false;      // "averaging": {"delayed_parameter_updates": true}
    int localUpdatesInnerBatch = 0;            // != 0: "averaging": {"mode": "local_updates", ...}
    double outerLearningRate = 0.7;            // local updates only
    double outerMomentum = 0.9;                // local updates only
};

// Shapes of the presets (hidden, layers, heads, intermediate): tiny H128 L2 (2 heads, 512);
// default H256 L4 (4, 1024); large H512 L6 (8, 2048); E = 128. Vocabulary and positions come from
// the run. Throws dedloc::Error for other names.
[[nodiscard]] ModelShape presetShape(const std::string &preset, int vocabSize, int maxPositions);

// Returns the manifest it wrote. Throws dedloc::Error.
RunManifest makeRun(const MakeRunOptions &options);

} // namespace dedloc
