#include "run/RunManifest.h"

#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/JsonReader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <set>
#include <system_error>
#include <vector>

namespace dedloc {

namespace {

using nlohmann::json;

constexpr int kFormatVersion = 1;
// Name used in messages about the document itself (it has no dotted path of its own).
constexpr const char *kRootName = "manifest";

// Every refusal, the field reader's included: "<dotted path>: <what>" as a dedloc::Error.
[[noreturn]] void fail(const std::string &path, const std::string &what)
{
    throw Error((path.empty() ? std::string(kRootName) : path) + ": " + what);
}

constexpr double kInf = std::numeric_limits<double>::infinity();

bool isLowerHex64(const std::string &s)
{
    return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

bool isValidRunId(const std::string &s)
{
    return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-';
           });
}

// "host:port", "[v6addr]:port". A bare IPv6 address must be bracketed, else its colons would
// be ambiguous with the port separator.
bool isValidPeerAddress(const std::string &s)
{
    const auto colon = s.rfind(':');
    if (colon == std::string::npos)
        return false;
    const std::string host = s.substr(0, colon);
    const std::string port = s.substr(colon + 1);
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return false;
    const int portValue = std::stoi(port);
    if (portValue < 1 || portValue > 65535)
        return false;
    if (host.empty() || std::any_of(host.begin(), host.end(), [](unsigned char c) { return c <= ' ' || c == '/' || c >= 0x7f; }))
        return false;
    if (host.front() == '[')
        return host.size() > 2 && host.back() == ']' && host.find_first_of("[]", 1) == host.size() - 1;
    return host.find_first_of(":[]") == std::string::npos;
}

FileRef readFileRef(const JsonObjectReader &r)
{
    FileRef ref;
    ref.path = r.nonEmptyString("path");
    ref.sha256 = r.string("sha256");
    if (!isLowerHex64(ref.sha256))
        r.fail("sha256", "expected 64 lowercase hex digits, got " + jsonExcerpt(ref.sha256));
    return ref;
}

Compression parseCompression(const std::string &name, const std::string &path)
{
    const auto codec = compressionFromName(name);
    if (codec && *codec != Compression::SparseFp16)
        return *codec;
    fail(path, "unknown compression \"" + name + "\" (expected one of " + compressionChoices() + ")");
}

const char *aggregationRuleName(AggregationRule rule)
{
    return rule == AggregationRule::CenteredClip ? "centered-clip" : "mean";
}

AggregationSpec parseAggregation(const JsonObjectReader &root)
{
    const JsonObjectReader r = root.object("aggregation", {"rule", "radius", "max_rate_over_median"});
    AggregationSpec spec;
    const std::string rule = r.string("rule");
    if (rule == "centered-clip")
        spec.rule = AggregationRule::CenteredClip;
    else if (rule != "mean")
        r.fail("rule", "expected \"mean\" or \"centered-clip\", got " + jsonExcerpt(rule));
    if (r.has("radius"))
        spec.radius = r.numberIn("radius", 1.0, false, 1000.0, false);
    if (r.has("max_rate_over_median"))
        spec.maxRateOverMedian = r.numberIn("max_rate_over_median", 1.0, false, 1.0e6, false);
    return spec;
}

AveragingSpec parseAveraging(const JsonObjectReader &root, int targetBatchSize)
{
    const JsonObjectReader r = root.object("averaging", {"delayed_parameter_updates", "mode", "inner_batch_size",
                                                         "outer_learning_rate", "outer_momentum", "group_size"});
    AveragingSpec spec;
    if (r.has("group_size")) {
        spec.groupSize = r.integer("group_size", 1);
        if (spec.groupSize < AveragingSpec::MinGroupSize || spec.groupSize > AveragingSpec::MaxGroupSize)
            r.fail("group_size", "is " + std::to_string(spec.groupSize) + ", expected "
                                     + std::to_string(AveragingSpec::MinGroupSize) + " to "
                                     + std::to_string(AveragingSpec::MaxGroupSize));
    }
    if (r.has("delayed_parameter_updates"))
        spec.delayedParameterUpdates = r.boolean("delayed_parameter_updates");
    const std::string mode = r.has("mode") ? r.string("mode") : "gradients";
    if (mode == "gradients") {
        for (const char *key : {"inner_batch_size", "outer_learning_rate", "outer_momentum"})
            if (r.has(key))
                r.fail(key, "applies to \"mode\": \"local_updates\" only");
        return spec;
    }
    if (mode != "local_updates")
        r.fail("mode", "expected \"gradients\" or \"local_updates\", got " + jsonExcerpt(mode));
    spec.mode = AveragingMode::LocalUpdates;
    spec.innerBatchSize = r.integer("inner_batch_size", 1);
    if (spec.innerBatchSize > targetBatchSize)
        r.fail("inner_batch_size", "is " + std::to_string(spec.innerBatchSize)
                                       + ", more than training.target_batch_size " + std::to_string(targetBatchSize));
    if (r.has("outer_learning_rate"))
        spec.outerLearningRate = r.numberIn("outer_learning_rate", 0.0, true, 10.0, false);
    if (r.has("outer_momentum"))
        spec.outerMomentum = r.numberIn("outer_momentum", 0.0, false, 1.0, true);
    return spec;
}

json averagingJson(const AveragingSpec &a)
{
    json out = {{"delayed_parameter_updates", a.delayedParameterUpdates}};
    if (a.mode == AveragingMode::LocalUpdates) {
        out = {{"mode", "local_updates"}, {"inner_batch_size", a.innerBatchSize},
               {"outer_learning_rate", a.outerLearningRate}, {"outer_momentum", a.outerMomentum}};
        if (a.delayedParameterUpdates)
            out["delayed_parameter_updates"] = true;
    }
    if (a.groupSize != AveragingSpec{}.groupSize)
        out["group_size"] = a.groupSize;
    return out;
}

// nlohmann keeps the last of duplicate keys silently; two peers reading the "same" manifest with
// different parsers could then disagree, so a duplicate is an error.
json parseStrictJson(const std::string &text)
{
    std::vector<std::set<std::string>> seenKeys;
    const json::parser_callback_t onEvent = [&seenKeys](int, json::parse_event_t event, json &parsed) {
        if (event == json::parse_event_t::object_start) {
            seenKeys.emplace_back();
        } else if (event == json::parse_event_t::object_end) {
            seenKeys.pop_back();
        } else if (event == json::parse_event_t::key && !seenKeys.back().insert(parsed.get<std::string>()).second) {
            throw Error(std::string(kRootName) + ": duplicate key \"" + parsed.get<std::string>() + "\"");
        }
        return true;
    };
    try {
        return json::parse(text, onEvent);
    } catch (const json::exception &e) {
        // e.what() is "[json.exception.parse_error.101] parse error at line L, column C: ...";
        // the bracketed id means nothing to a user.
        std::string what = e.what();
        if (const auto close = what.find("] "); what.rfind("[json.exception", 0) == 0 && close != std::string::npos)
            what.erase(0, close + 2);
        throw Error(std::string(kRootName) + ": invalid JSON: " + what);
    }
}

void verifyFile(const RunManifest &manifest, const FileRef &ref, const std::string &kind)
{
    const std::filesystem::path file = manifest.resolve(ref.path);
    std::error_code ec;
    if (!std::filesystem::exists(file, ec))
        throw Error(kind + " file " + file.string() + " does not exist");
    if (!std::filesystem::is_regular_file(file, ec))
        throw Error(kind + " file " + file.string() + " is not a regular file");
    const std::string actual = sha256File(file);
    if (actual != ref.sha256)
        throw Error(kind + " file " + file.string() + ": SHA-256 mismatch (manifest says " + ref.sha256 +
                    ", file has " + actual + ")");
}

} // namespace

std::filesystem::path RunManifest::resolve(const std::string &relative) const
{
    std::filesystem::path p(relative);
    if (p.is_absolute() || baseDir.empty())
        return p;
    return baseDir / p;
}

AggregationSpec RunManifest::aggregation() const
{
    if (aggregationField)
        return *aggregationField;
    AggregationSpec spec;
    spec.rule = closed ? AggregationRule::Mean : AggregationRule::CenteredClip;
    return spec;
}

double RunManifest::maxRateOverMedian() const
{
    if (aggregationField && aggregationField->maxRateOverMedian)
        return *aggregationField->maxRateOverMedian;
    return closed ? std::numeric_limits<double>::infinity() : AggregationSpec::OpenRunRateBound;
}

RunManifest parseRunManifest(const std::string &json, const std::filesystem::path &baseDir)
{
    const auto doc = parseStrictJson(json);
    // Checked before the strict field checks: a newer format may add or change any other field,
    // and "unsupported version" is the message that tells the user what to do.
    if (doc.is_object() && doc.contains("format_version")) {
        const auto &v = doc["format_version"];
        if (v.is_number_integer() && v != kFormatVersion)
            fail("format_version", "unsupported version " + jsonExcerpt(v) + " (this build reads version " +
                                       std::to_string(kFormatVersion) + ")");
    }
    const JsonObjectReader root(doc,
                                {"format_version", "run_id", "name", "lead", "description", "model", "tokenizer",
                                 "corpus", "training", "optimizer", "schedule", "compression", "bootstrap_peers",
                                 "access", "evaluation", "aggregation", "averaging"},
                                fail);
    RunManifest m;
    m.baseDir = baseDir;

    m.formatVersion = root.integer("format_version", 1);
    m.runId = root.string("run_id");
    if (!isValidRunId(m.runId))
        fail("run_id", "expected 1 to 64 of A-Z a-z 0-9 . _ -, got " + jsonExcerpt(m.runId));
    m.name = root.nonEmptyString("name");
    m.lead = root.string("lead");
    if (root.has("description"))
        m.description = root.string("description");

    {
        const JsonObjectReader r =
            root.object("model", {"preset", "vocab_size", "embedding_size", "hidden_size", "num_layers", "num_heads",
                                  "intermediate_size", "max_positions"});
        ModelShape &s = m.model;
        s.preset = r.string("preset");
        if (s.preset != "tiny" && s.preset != "default" && s.preset != "large" && s.preset != "custom")
            r.fail("preset", "expected one of tiny, default, large, custom, got " + jsonExcerpt(s.preset));
        s.vocabSize = r.integer("vocab_size", 1);
        s.embeddingSize = r.integer("embedding_size", 1);
        s.hiddenSize = r.integer("hidden_size", 1);
        s.numLayers = r.integer("num_layers", 1);
        s.numHeads = r.integer("num_heads", 1);
        s.intermediateSize = r.integer("intermediate_size", 1);
        s.maxPositions = r.integer("max_positions", 1);
        if (s.hiddenSize % s.numHeads != 0)
            r.fail("hidden_size", std::to_string(s.hiddenSize) + " is not a multiple of model.num_heads (" +
                                      std::to_string(s.numHeads) + ")");
    }

    m.tokenizer = readFileRef(root.object("tokenizer", {"path", "sha256"}));

    {
        const JsonObjectReader r = root.object("corpus", {"files", "validation_fraction"});
        const auto &files = r.array("files");
        if (files.empty())
            r.fail("files", "expected at least one file");
        for (std::size_t i = 0; i < files.size(); ++i)
            m.corpus.files.push_back(readFileRef(r.objectAt("files", i, {"path", "sha256"})));
        m.corpus.validationFraction = r.numberIn("validation_fraction", 0.0, false, 0.5, true);
    }

    {
        const JsonObjectReader r =
            root.object("training", {"sequence_length", "target_batch_size", "micro_batch_size", "mask_probability",
                                     "max_grad_norm", "validation_every_n_steps", "validation_samples",
                                     "checkpoint_every_n_steps"});
        TrainingSpec &t = m.training;
        t.sequenceLength = r.integer("sequence_length", 1);
        // [CLS] + [SEP] + a few tokens to mask; shorter sequences cannot train anything.
        if (t.sequenceLength < 8)
            r.fail("sequence_length", "must be at least 8, got " + std::to_string(t.sequenceLength));
        t.targetBatchSize = r.integer("target_batch_size", 1);
        t.microBatchSize = r.integer("micro_batch_size", 1);
        if (t.microBatchSize > t.targetBatchSize)
            r.fail("micro_batch_size", std::to_string(t.microBatchSize) + " exceeds training.target_batch_size (" +
                                           std::to_string(t.targetBatchSize) + ")");
        t.maskProbability = r.numberIn("mask_probability", 0.0, true, 1.0, true);
        t.maxGradNorm = r.number("max_grad_norm");
        t.validationEveryNSteps = r.integer("validation_every_n_steps", 1);
        t.validationSamples = r.integer("validation_samples", 1);
        t.checkpointEveryNSteps = r.integer("checkpoint_every_n_steps", 1);
    }
    if (m.model.maxPositions < m.training.sequenceLength)
        fail("model.max_positions", std::to_string(m.model.maxPositions) + " is less than training.sequence_length (" +
                                        std::to_string(m.training.sequenceLength) + ")");

    {
        const JsonObjectReader r = root.object("optimizer", {"name", "learning_rate", "beta1", "beta2", "epsilon",
                                                             "weight_decay", "clamp_value", "debias"});
        OptimizerSpec &o = m.optimizer;
        o.name = r.string("name");
        if (o.name != "lamb")
            r.fail("name", "unsupported optimizer " + jsonExcerpt(o.name) + " (only \"lamb\" is implemented)");
        o.learningRate = r.numberIn("learning_rate", 0.0, true, kInf, true);
        o.beta1 = r.numberIn("beta1", 0.0, true, 1.0, true);
        o.beta2 = r.numberIn("beta2", 0.0, true, 1.0, true);
        o.epsilon = r.numberIn("epsilon", 0.0, true, kInf, true);
        o.weightDecay = r.numberIn("weight_decay", 0.0, false, kInf, true);
        o.clampValue = r.numberIn("clamp_value", 0.0, true, kInf, true);
        o.debias = r.boolean("debias");
    }

    {
        const JsonObjectReader r = root.object("schedule", {"warmup_steps", "total_steps"});
        m.schedule.warmupSteps = r.integer("warmup_steps", 0);
        m.schedule.totalSteps = r.integer("total_steps", 1);
        if (m.schedule.warmupSteps >= m.schedule.totalSteps)
            r.fail("warmup_steps", "must be less than schedule.total_steps (" + std::to_string(m.schedule.totalSteps) +
                                       "), got " + std::to_string(m.schedule.warmupSteps));
    }

    m.compression = parseCompression(root.string("compression"), "compression");

    const auto &peers = root.array("bootstrap_peers");
    for (std::size_t i = 0; i < peers.size(); ++i) {
        const std::string path = "bootstrap_peers[" + std::to_string(i) + "]";
        if (!peers[i].is_string())
            fail(path, "expected a string, got " + jsonExcerpt(peers[i]));
        const std::string address = peers[i].get<std::string>();
        if (!isValidPeerAddress(address))
            fail(path, "expected \"host:port\" with port 1..65535, got " + jsonExcerpt(peers[i]));
        m.bootstrapPeers.push_back(address);
    }
    if (root.has("access")) {
        const std::string access = root.string("access");
        if (access != "open" && access != "closed")
            fail("access", "expected \"open\" or \"closed\", got " + jsonExcerpt(access));
        m.closed = access == "closed";
    }
    if (root.has("evaluation")) {
        const JsonObjectReader r = root.object("evaluation", {"task", "every_n_steps"});
        m.evaluation.task = r.nonEmptyString("task");
        m.evaluation.everyNSteps = r.integer("every_n_steps", 1);
    }
    if (root.has("aggregation"))
        m.aggregationField = parseAggregation(root);
    if (root.has("averaging"))
        m.averagingField = parseAveraging(root, m.training.targetBatchSize);
    return m;
}

RunManifest loadRunManifest(const std::filesystem::path &file)
{
    std::error_code ec;
    if (!std::filesystem::exists(file, ec))
        throw Error("run manifest " + file.string() + " does not exist");
    if (!std::filesystem::is_regular_file(file, ec))
        throw Error("run manifest " + file.string() + " is not a regular file");
    // Absolute, so that resolve() keeps working if the working directory changes later.
    const std::filesystem::path absolute = std::filesystem::absolute(file, ec);
    const std::string text = readWholeFile(file);
    try {
        return parseRunManifest(text, (ec ? file : absolute).parent_path());
    } catch (const Error &e) {
        throw Error(file.string() + ": " + e.what());
    }
}

std::string toJson(const RunManifest &m)
{
    const auto fileRef = [](const FileRef &f) { return json{{"path", f.path}, {"sha256", f.sha256}}; };
    json files = json::array();
    for (const FileRef &f : m.corpus.files)
        files.push_back(fileRef(f));
    const json doc = {
        {"format_version", m.formatVersion},
        {"run_id", m.runId},
        {"name", m.name},
        {"lead", m.lead},
        {"description", m.description},
        {"model",
         {{"preset", m.model.preset},
          {"vocab_size", m.model.vocabSize},
          {"embedding_size", m.model.embeddingSize},
          {"hidden_size", m.model.hiddenSize},
          {"num_layers", m.model.numLayers},
          {"num_heads", m.model.numHeads},
          {"intermediate_size", m.model.intermediateSize},
          {"max_positions", m.model.maxPositions}}},
        {"tokenizer", fileRef(m.tokenizer)},
        {"corpus", {{"files", files}, {"validation_fraction", m.corpus.validationFraction}}},
        {"training",
         {{"sequence_length", m.training.sequenceLength},
          {"target_batch_size", m.training.targetBatchSize},
          {"micro_batch_size", m.training.microBatchSize},
          {"mask_probability", m.training.maskProbability},
          {"max_grad_norm", m.training.maxGradNorm},
          {"validation_every_n_steps", m.training.validationEveryNSteps},
          {"validation_samples", m.training.validationSamples},
          {"checkpoint_every_n_steps", m.training.checkpointEveryNSteps}}},
        {"optimizer",
         {{"name", m.optimizer.name},
          {"learning_rate", m.optimizer.learningRate},
          {"beta1", m.optimizer.beta1},
          {"beta2", m.optimizer.beta2},
          {"epsilon", m.optimizer.epsilon},
          {"weight_decay", m.optimizer.weightDecay},
          {"clamp_value", m.optimizer.clampValue},
          {"debias", m.optimizer.debias}}},
        {"schedule", {{"warmup_steps", m.schedule.warmupSteps}, {"total_steps", m.schedule.totalSteps}}},
        {"compression", compressionName(m.compression)},
        {"bootstrap_peers", m.bootstrapPeers},
    };
    // Optional sections are written only when set, so manifests without them keep the bytes
    // (and signatures) they had.
    json out = doc;
    if (m.closed)
        out["access"] = "closed";
    if (!m.evaluation.task.empty())
        out["evaluation"] = {{"task", m.evaluation.task}, {"every_n_steps", m.evaluation.everyNSteps}};
    if (m.aggregationField) {
        out["aggregation"] = {{"rule", aggregationRuleName(m.aggregationField->rule)},
                              {"radius", m.aggregationField->radius}};
        if (m.aggregationField->maxRateOverMedian)
            out["aggregation"]["max_rate_over_median"] = *m.aggregationField->maxRateOverMedian;
    }
    if (m.averagingField)
        out["averaging"] = averagingJson(*m.averagingField);
    return out.dump(2);
}

std::string trainingFingerprint(const RunManifest &manifest)
{
    // The optional sections as the peers resolve them: an absent section and one that spells
    // out its defaults compute the same.
    auto resolved = manifest;
    resolved.aggregationField = manifest.aggregation();
    resolved.averagingField = manifest.averaging();
    auto doc = json::parse(toJson(resolved));
    for (const char *key : {"name", "lead", "description", "bootstrap_peers", "evaluation"})
        doc.erase(key);
    for (const char *key :
         {"validation_every_n_steps", "validation_samples", "checkpoint_every_n_steps", "micro_batch_size"})
        doc["training"].erase(key);
    const std::string canonical = doc.dump();
    return sha256Hex(canonical.data(), canonical.size()).substr(0, 16);
}

void verifyRunFiles(const RunManifest &manifest)
{
    verifyFile(manifest, manifest.tokenizer, "tokenizer");
    for (const FileRef &f : manifest.corpus.files)
        verifyFile(manifest, f, "corpus");
}

} // namespace dedloc
