#include "run/RunMaker.h"

#include "model/Tokenizer.h"
#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"

namespace dedloc {

ModelShape presetShape(const std::string &preset, int vocabSize, int positions)
{
    ModelShape s;
    s.preset = preset;
    s.vocabSize = vocabSize;
    s.maxPositions = positions;
    s.embeddingSize = 128;
    if (preset == "tiny")
        s.hiddenSize = 128, s.numLayers = 2, s.numHeads = 2, s.intermediateSize = 512;
    else if (preset == "default")
        s.hiddenSize = 256, s.numLayers = 4, s.numHeads = 4, s.intermediateSize = 1024;
    else if (preset == "large")
        s.hiddenSize = 512, s.numLayers = 6, s.numHeads = 8, s.intermediateSize = 2048;
    else
        throw Error("unknown model preset \"" + preset + "\" (tiny, default or large)");
    return s;
}

namespace {

// The lead's settings: model shape aside, everything that does not depend on the files.
void applySettings(RunManifest &m, const MakeRunOptions &o)
{
    m.training.sequenceLength = o.sequenceLength;
    m.training.targetBatchSize = o.targetBatchSize;
    m.training.microBatchSize = o.microBatchSize;
    m.optimizer.learningRate = o.learningRate;
    m.schedule.warmupSteps = o.warmupSteps;
    m.schedule.totalSteps = o.totalSteps;
    m.compression = o.compression;
    m.closed = o.closed;
    if (!o.delayedParameterUpdates && o.localUpdatesInnerBatch == 0)
        return; // today's mode: no section, as manifests had before it existed
    AveragingSpec a;
    a.delayedParameterUpdates = o.delayedParameterUpdates;
    if (o.localUpdatesInnerBatch != 0) {
        a.mode = AveragingMode::LocalUpdates;
        a.innerBatchSize = o.localUpdatesInnerBatch;
        a.outerLearningRate = o.outerLearningRate;
        a.outerMomentum = o.outerMomentum;
    }
    m.averagingField = a;
}

// Parses a manifest with these settings and placeholder files, so that a setting the parser
// refuses is refused before the corpus is copied and a tokenizer trained.
void checkSettings(const MakeRunOptions &o)
{
    RunManifest trial;
    trial.runId = o.runId;
    trial.name = o.name;
    trial.lead = o.lead;
    trial.description = o.description;
    trial.corpus.files.push_back({"corpus/text.txt", std::string(64, '0')});
    trial.corpus.validationFraction = o.validationFraction;
    trial.tokenizer = {"tokenizer.model", std::string(64, '0')};
    trial.model = presetShape(o.preset, o.vocabSize, o.sequenceLength);
    applySettings(trial, o);
    (void)parseRunManifest(toJson(trial), o.outputDir);
}

} // namespace

RunManifest makeRun(const MakeRunOptions &o)
{
    namespace fs = std::filesystem;
    if (o.corpus.empty())
        throw Error("make-run needs at least one corpus file (--corpus)");
    checkSettings(o); // a bad preset or setting is refused before any work
    std::error_code ec;
    fs::create_directories(o.outputDir / "corpus", ec);
    if (ec)
        throw Error("cannot create " + (o.outputDir / "corpus").string() + ": " + ec.message());

    RunManifest m;
    m.runId = o.runId;
    m.name = o.name;
    m.lead = o.lead;
    m.description = o.description;
    m.baseDir = o.outputDir;
    std::vector<fs::path> copied;
    for (const auto &src : o.corpus) {
        if (!fs::exists(src))
            throw Error("corpus file " + src.string() + " does not exist");
        const auto dst = o.outputDir / "corpus" / src.filename();
        if (!fs::exists(dst) || !fs::equivalent(src, dst)) {
            fs::copy_file(src, dst, fs::copy_options::overwrite_existing, ec);
            if (ec)
                throw Error("cannot copy " + src.string() + " to " + dst.string() + ": " + ec.message());
            // Licence and provenance travel with the text.
            const auto source = src.parent_path() / "SOURCE.md";
            if (fs::exists(source))
                fs::copy_file(source, o.outputDir / "corpus" / "SOURCE.md", fs::copy_options::overwrite_existing, ec);
        }
        copied.push_back(dst);
        m.corpus.files.push_back({"corpus/" + src.filename().string(), sha256File(dst)});
    }
    m.corpus.validationFraction = o.validationFraction;

    const auto tokenizerFile = o.outputDir / "tokenizer.model";
    if (o.retrainTokenizer || !fs::exists(tokenizerFile)) {
        log::info("lead", "training a " + std::to_string(o.vocabSize) + "-token unigram tokenizer");
        TokenizerTrainingOptions t;
        t.vocabSize = o.vocabSize;
        trainTokenizer(copied, o.outputDir / "tokenizer", t);
    }
    const Tokenizer tokenizer(tokenizerFile); // checks the special tokens
    m.tokenizer = {"tokenizer.model", sha256File(tokenizerFile)};

    m.model = presetShape(o.preset, tokenizer.vocabSize(), o.sequenceLength);
    applySettings(m, o);

    // Round-trip through the parser so that we never write a manifest we would refuse.
    const std::string json = toJson(m);
    const RunManifest checked = parseRunManifest(json, o.outputDir);
    writeFileAtomically(o.outputDir / "manifest.json", json + "\n");
    return checked;
}

} // namespace dedloc
