#include "eval/DownstreamEvaluation.h"

#include "eval/LabelledText.h"
#include "model/Tokenizer.h"
#include "train/Checkpoint.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"

#include <chrono>

namespace dedloc {

namespace {

using Clock = std::chrono::steady_clock;

// The fields of a checkpoint's "model" that its tensors cannot show (layers share one set of
// weights; heads split H) and the rest, as the trainer writes them.
void checkShapeMeta(const nlohmann::json &meta, const ModelShape &s, const std::filesystem::path &file)
{
    const auto model = meta.find("model");
    if (model == meta.end() || !model->is_object())
        return;
    const std::pair<const char *, int> fields[] = {
        {"vocab_size", s.vocabSize},      {"embedding_size", s.embeddingSize},
        {"hidden_size", s.hiddenSize},    {"num_layers", s.numLayers},
        {"num_heads", s.numHeads},        {"intermediate_size", s.intermediateSize},
        {"max_positions", s.maxPositions}};
    for (const auto &[name, expected] : fields) {
        const auto it = model->find(name);
        if (it != model->end() && (!it->is_number_integer() || it->get<long long>() != expected))
            throw Error(file.string() + ": the checkpoint's model." + name + " is " + it->dump() +
                        ", the manifest's model has " + std::to_string(expected));
    }
}

template <typename T> std::optional<T> metaValue(const nlohmann::json &meta, const nlohmann::json::json_pointer &where)
{
    if (!meta.contains(where))
        return std::nullopt;
    const auto &v = meta.at(where);
    return v.is_number_integer() ? std::optional<T>(v.get<T>()) : std::nullopt;
}

nlohmann::json scoresJson(const ClassificationScores &s, const std::vector<std::string> &labels)
{
    auto perLabel = nlohmann::json::array();
    for (std::size_t i = 0; i < s.perLabel.size(); ++i) {
        const auto &l = s.perLabel[i];
        perLabel.push_back({{"label", i < labels.size() ? labels[i] : std::to_string(i)},
                            {"support", l.support},
                            {"predicted", l.predicted},
                            {"true_positives", l.truePositives},
                            {"precision", l.precision},
                            {"recall", l.recall},
                            {"f1", l.f1}});
    }
    return {{"examples", s.examples}, {"accuracy", s.accuracy}, {"macro_f1", s.macroF1}, {"per_label", perLabel}};
}

nlohmann::json runJson(const FineTuneResult &r, const std::vector<std::string> &labels)
{
    return {{"test", scoresJson(r.test, labels)},
            {"dev", r.dev ? scoresJson(*r.dev, labels) : nlohmann::json()},
            {"steps", r.steps},
            {"train_loss", r.trainLoss},
            {"seconds", r.seconds}};
}

nlohmann::json optionsJson(const FineTuneOptions &o)
{
    return {{"epochs", o.epochs},
            {"batch_size", o.batchSize},
            {"learning_rate", o.learningRate},
            {"weight_decay", o.weightDecay},
            {"warmup_fraction", o.warmupFraction},
            {"max_grad_norm", o.maxGradNorm},
            {"max_tokens", o.maxTokens},
            {"seed", o.seed}};
}

std::string summary(const char *what, const FineTuneResult &r)
{
    return std::string(what) + ": test accuracy " + std::to_string(r.test.accuracy) + ", macro-F1 " +
           std::to_string(r.test.macroF1) + " (" + std::to_string(r.seconds) + " s)";
}

} // namespace

nlohmann::json DownstreamResult::toJson() const
{
    auto optionalJson = [](const auto &v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
    return {{"task", task},
            {"labels", labels},
            {"train_examples", trainExamples},
            {"checkpoint", checkpoint ? nlohmann::json(checkpoint->string()) : nlohmann::json()},
            {"epoch", optionalJson(epoch)},
            {"peer_samples", optionalJson(peerSamples)},
            {"run_id", runId},
            {"options", optionsJson(options)},
            {"pretrained", runJson(pretrained, labels)},
            {"control", control ? runJson(*control, labels) : nlohmann::json()},
            {"seconds", seconds}};
}

DownstreamResult evaluateDownstream(const RunManifest &manifest, const std::optional<std::filesystem::path> &checkpoint,
                                    const std::filesystem::path &taskDirectory, const DownstreamOptions &options)
{
    const auto start = Clock::now();
    const auto tokenizerFile = manifest.resolve(manifest.tokenizer.path);
    if (const auto actual = sha256File(tokenizerFile); actual != manifest.tokenizer.sha256)
        throw Error(tokenizerFile.string() + ": SHA-256 " + actual + " differs from the manifest's " +
                    manifest.tokenizer.sha256);
    const Tokenizer tokenizer(tokenizerFile);
    const auto data = readLabelledTextSet(taskDirectory);

    DownstreamResult result;
    result.task = taskDirectory.filename().string();
    if (result.task.empty())
        result.task = taskDirectory.parent_path().filename().string();
    result.labels = data.labels;
    result.trainExamples = data.train.size();
    result.options = options.fineTune;
    std::optional<Checkpoint> loaded;
    if (checkpoint) {
        loaded = readCheckpointFile(*checkpoint);
        checkShapeMeta(loaded->meta, manifest.model, *checkpoint);
        result.checkpoint = *checkpoint;
        result.epoch = metaValue<long>(loaded->meta, nlohmann::json::json_pointer("/step"));
        result.peerSamples = metaValue<long long>(loaded->meta, nlohmann::json::json_pointer("/contribution/samples"));
        result.runId = loaded->meta.value("run_id", std::string());
    }
    log::info("eval", "fine-tuning " + (checkpoint ? checkpoint->string() : std::string("the random initialisation")) +
                          " on " + taskDirectory.string() + " (" + std::to_string(data.train.size()) + " train, " +
                          std::to_string(data.test.size()) + " test examples)");
    result.pretrained =
        fineTuneClassifier(manifest.model, loaded ? &loaded->tensors : nullptr, tokenizer, data, options.fineTune);
    log::info("eval", summary(checkpoint ? "pretrained" : "random initialisation", result.pretrained));
    if (checkpoint && options.control) {
        result.control = fineTuneClassifier(manifest.model, nullptr, tokenizer, data, options.fineTune);
        log::info("eval", summary("control (random initialisation)", *result.control));
    }
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return result;
}

} // namespace dedloc
