// Run manifest: strict parsing (every field's path in the error), canonical round trip, file
// verification by SHA-256 (RunPaths has its own test).
#include "ManifestFixtures.h"
#include "TestSupport.h"

#include "run/RunManifest.h"
#include "run/RunPaths.h"
#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Hash.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>

using dedloc::Compression;
using dedloc::RunManifest;
using dedloc::test::edited;
using dedloc::test::flipOneByte;
using dedloc::test::kAbcSha256;
using dedloc::test::kHashA;
using dedloc::test::kHashB;
using dedloc::test::kValidManifest;
using dedloc::test::parseError;
using nlohmann::json;
namespace fs = std::filesystem;

class TestManifest final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void parsesValidManifest();
    void roundTripIsCanonical();
    void rejectsInvalidField_data();
    void rejectsInvalidField();
    void acceptsBoundaryValues_data();
    void acceptsBoundaryValues();
    void optionalSectionsDefault();
    void rejectsMalformedJson_data();
    void rejectsMalformedJson();
    void compressionSpellings_data();
    void compressionSpellings();
    void loadSetsBaseDirAndResolves();
    void loadReportsMissingFile();
    void loadNamesFileOnError();
    void verifyRunFiles_data();
    void verifyRunFiles();
    void bundledManifestIsValid();
};

void TestManifest::parsesValidManifest()
{
    const RunManifest m = dedloc::parseRunManifest(kValidManifest, "/runs/demo");
    QCOMPARE(m.formatVersion, 1);
    QCOMPARE(m.runId, std::string("bn-albert-demo"));
    QCOMPARE(m.name, std::string("Bengali ALBERT demo"));
    QCOMPARE(m.lead, std::string("Test Lead"));
    QCOMPARE(m.description, std::string("A test run."));
    QCOMPARE(m.model.preset, std::string("tiny"));
    QCOMPARE(m.model.vocabSize, 8000);
    QCOMPARE(m.model.embeddingSize, 96);
    QCOMPARE(m.model.hiddenSize, 256);
    QCOMPARE(m.model.numLayers, 4);
    QCOMPARE(m.model.numHeads, 4);
    QCOMPARE(m.model.intermediateSize, 1024);
    QCOMPARE(m.model.maxPositions, 128);
    QCOMPARE(m.tokenizer.path, std::string("tokenizer.model"));
    QCOMPARE(m.tokenizer.sha256, std::string(kAbcSha256));
    QCOMPARE(m.corpus.files.size(), std::size_t(2));
    QCOMPARE(m.corpus.files[0].path, std::string("corpus/a.txt"));
    QCOMPARE(m.corpus.files[0].sha256, std::string(kHashA));
    QCOMPARE(m.corpus.files[1].path, std::string("corpus/b.txt"));
    QCOMPARE(m.corpus.files[1].sha256, std::string(kHashB));
    QCOMPARE(m.corpus.validationFraction, 0.05);
    QCOMPARE(m.training.sequenceLength, 64);
    QCOMPARE(m.training.targetBatchSize, 256);
    QCOMPARE(m.training.microBatchSize, 16);
    QCOMPARE(m.training.maskProbability, 0.2);
    QCOMPARE(m.training.maxGradNorm, 2.5);
    QCOMPARE(m.training.validationEveryNSteps, 7);
    QCOMPARE(m.training.validationSamples, 32);
    QCOMPARE(m.training.checkpointEveryNSteps, 11);
    QCOMPARE(m.optimizer.name, std::string("lamb"));
    QCOMPARE(m.optimizer.learningRate, 0.00176);
    QCOMPARE(m.optimizer.beta1, 0.85);
    QCOMPARE(m.optimizer.beta2, 0.995);
    QCOMPARE(m.optimizer.epsilon, 1e-7);
    QCOMPARE(m.optimizer.weightDecay, 0.02);
    QCOMPARE(m.optimizer.clampValue, 8.0);
    QCOMPARE(m.optimizer.debias, false);
    QCOMPARE(m.schedule.warmupSteps, 50);
    QCOMPARE(m.schedule.totalSteps, 2000);
    QCOMPARE(m.compression, Compression::Blockwise8Bit);
    QCOMPARE(m.bootstrapPeers, (std::vector<std::string>{"192.168.1.10:31337", "peer.example.org:31338"}));
    QCOMPARE(m.baseDir, fs::path("/runs/demo"));
}

void TestManifest::roundTripIsCanonical()
{
    const RunManifest m = dedloc::parseRunManifest(kValidManifest, {});
    const std::string canonical = dedloc::toJson(m);
    // Every field written under its own key with its own value: the document comes back equal,
    // and in nlohmann's sorted 2-space form.
    const json original = json::parse(kValidManifest);
    QCOMPARE(json::parse(canonical), original);
    QCOMPARE(canonical, original.dump(2));
    // Canonical means a fixed point.
    const RunManifest again = dedloc::parseRunManifest(canonical, {});
    QCOMPARE(dedloc::toJson(again), canonical);
    QCOMPARE(again.optimizer.learningRate, m.optimizer.learningRate);
    QCOMPARE(again.corpus.files[1].sha256, m.corpus.files[1].sha256);
}

void TestManifest::rejectsInvalidField_data()
{
    QTest::addColumn<QString>("op");
    QTest::addColumn<QString>("pointer");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("expected"); // the message's start

    const auto remove = [](const char *row, const char *pointer, const char *expected) {
        QTest::newRow(row) << "remove" << pointer << "" << expected;
    };
    const auto set = [](const char *row, const char *pointer, const char *value, const char *expected) {
        QTest::newRow(row) << "set" << pointer << value << expected;
    };

    // Missing fields, at every nesting level.
    remove("missing run_id", "/run_id", "run_id: missing");
    remove("missing format_version", "/format_version", "format_version: missing");
    remove("missing model", "/model", "model: missing");
    remove("missing model.hidden_size", "/model/hidden_size", "model.hidden_size: missing");
    remove("missing tokenizer.sha256", "/tokenizer/sha256", "tokenizer.sha256: missing");
    remove("missing corpus.files[1].sha256", "/corpus/files/1/sha256", "corpus.files[1].sha256: missing");
    remove("missing training.micro_batch_size", "/training/micro_batch_size", "training.micro_batch_size: missing");
    remove("missing optimizer.learning_rate", "/optimizer/learning_rate", "optimizer.learning_rate: missing");
    remove("missing optimizer.debias", "/optimizer/debias", "optimizer.debias: missing");
    remove("missing schedule.total_steps", "/schedule/total_steps", "schedule.total_steps: missing");
    remove("missing compression", "/compression", "compression: missing");
    remove("missing bootstrap_peers", "/bootstrap_peers", "bootstrap_peers: missing");

    // Unknown fields, at every nesting level; a typo is named, not reported as the field missing.
    set("unknown top-level", "/foo", "1", "manifest: unknown field \"foo\"");
    set("unknown in training", "/training/foo", "1", "training: unknown field \"foo\"");
    set("unknown in model", "/model/hiden_size", "256", "model: unknown field \"hiden_size\"");
    set("unknown in corpus.files[0]", "/corpus/files/0/size", "10", "corpus.files[0]: unknown field \"size\"");
    set("unknown in schedule", "/schedule/decay", "\"cosine\"", "schedule: unknown field \"decay\"");

    // Wrong types.
    set("string for int", "/model/hidden_size", "\"256\"", "model.hidden_size: expected a positive integer, got \"256\"");
    set("float for int", "/training/micro_batch_size", "2.5", "training.micro_batch_size: expected a positive integer, got 2.5");
    set("integral float for int", "/model/num_layers", "4.0", "model.num_layers: expected a positive integer, got 4.0");
    set("bool for int", "/model/num_layers", "true", "model.num_layers: expected a positive integer, got true");
    set("negative int", "/schedule/total_steps", "-5", "schedule.total_steps: expected a positive integer, got -5");
    set("zero int", "/model/vocab_size", "0", "model.vocab_size: expected a positive integer, got 0");
    set("int beyond int range", "/model/vocab_size", "3000000000", "model.vocab_size: expected a positive integer up to");
    set("null for int", "/training/validation_samples", "null", "training.validation_samples: expected a positive integer, got null");
    set("array for object", "/tokenizer", "[]", "tokenizer: expected an object, got []");
    set("string for object", "/model", "\"tiny\"", "model: expected an object, got \"tiny\"");
    set("object for array", "/corpus/files", "{}", "corpus.files: expected an array, got {}");
    set("string for file object", "/corpus/files/0", "\"a.txt\"", "corpus.files[0]: expected an object");
    set("string for number", "/optimizer/learning_rate", "\"0.001\"", "optimizer.learning_rate: expected a number, got \"0.001\"");
    set("bool for number", "/corpus/validation_fraction", "false", "corpus.validation_fraction: expected a number, got false");
    set("int for bool", "/optimizer/debias", "1", "optimizer.debias: expected true or false, got 1");
    set("number for string", "/name", "5", "name: expected a string, got 5");
    set("number for description", "/description", "5", "description: expected a string, got 5");
    set("root is an array", "", "[]", "manifest: expected an object, got []");

    // Strings with a format.
    set("uppercase hex", "/tokenizer/sha256", "\"BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD\"",
        "tokenizer.sha256: expected 64 lowercase hex digits");
    set("63 hex digits", "/corpus/files/1/sha256", "\"000000000000000000000000000000000000000000000000000000000000001\"",
        "corpus.files[1].sha256: expected 64 lowercase hex digits");
    set("non-hex digit", "/corpus/files/0/sha256", "\"g000000000000000000000000000000000000000000000000000000000000001\"",
        "corpus.files[0].sha256: expected 64 lowercase hex digits");
    set("empty file path", "/corpus/files/0/path", "\"\"", "corpus.files[0].path: must not be empty");
    set("run_id with space", "/run_id", "\"bn albert\"", "run_id: expected 1 to 64");
    set("run_id with slash", "/run_id", "\"bn/albert\"", "run_id: expected 1 to 64");
    set("empty run_id", "/run_id", "\"\"", "run_id: expected 1 to 64");
    set("65-char run_id", "/run_id", "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"", "run_id: expected 1 to 64");
    set("empty name", "/name", "\"\"", "name: must not be empty");
    set("number for lead", "/lead", "false", "lead: expected a string, got false");
    set("unknown preset", "/model/preset", "\"huge\"", "model.preset: expected one of tiny, default, large, custom");
    set("bad compression name", "/compression", "\"zip\"", "compression: unknown compression \"zip\"");
    set("wire-only codec", "/compression", "\"sparse_fp16\"", "compression: unknown compression \"sparse_fp16\"");
    set("compression as number", "/compression", "8", "compression: expected a string, got 8");
    set("optimizer not lamb", "/optimizer/name", "\"adam\"", "optimizer.name: unsupported optimizer \"adam\"");
    set("format_version 2", "/format_version", "2", "format_version: unsupported version 2");

    // Peers.
    set("peer without port", "/bootstrap_peers", R"(["localhost"])", "bootstrap_peers[0]: expected \"host:port\"");
    set("peer port 0", "/bootstrap_peers", R"(["a.org:1", "b.org:0"])", "bootstrap_peers[1]: expected \"host:port\"");
    set("peer port 65536", "/bootstrap_peers", R"(["b.org:65536"])", "bootstrap_peers[0]: expected \"host:port\"");
    set("peer port not a number", "/bootstrap_peers", R"(["b.org:http"])", "bootstrap_peers[0]: expected \"host:port\"");
    set("peer without host", "/bootstrap_peers", R"([":31337"])", "bootstrap_peers[0]: expected \"host:port\"");
    set("peer unbracketed IPv6", "/bootstrap_peers", R"(["::1:31337"])", "bootstrap_peers[0]: expected \"host:port\"");
    set("peer with space", "/bootstrap_peers", R"(["my host:31337"])", "bootstrap_peers[0]: expected \"host:port\"");
    set("peer not a string", "/bootstrap_peers", "[31337]", "bootstrap_peers[0]: expected a string, got 31337");
    set("peers not an array", "/bootstrap_peers", "\"a.org:1\"", "bootstrap_peers: expected an array");

    // Access (closed runs).
    set("access misspelt", "/access", "\"close\"", "access: expected \"open\" or \"closed\", got \"close\"");
    set("access as bool", "/access", "true", "access: expected a string, got true");
    set("access empty", "/access", "\"\"", "access: expected \"open\" or \"closed\"");

    set("aggregation rule unknown", "/aggregation", R"({"rule": "median"})",
        "aggregation.rule: expected \"mean\" or \"centered-clip\", got \"median\"");
    set("aggregation radius below 1", "/aggregation", R"({"rule": "centered-clip", "radius": 0.5})", "aggregation.radius:");
    set("aggregation rate bound below 1", "/aggregation", R"({"rule": "mean", "max_rate_over_median": 0.5})",
        "aggregation.max_rate_over_median:");
    set("aggregation unknown field", "/aggregation", R"({"rule": "mean", "tau": 1})", "aggregation: unknown field \"tau\"");
    set("evaluation without task", "/evaluation", R"({"every_n_steps": 10})", "evaluation.task: missing");
    set("evaluation every 0", "/evaluation", R"({"task": "e", "every_n_steps": 0})", "evaluation.every_n_steps: expected a positive");
    set("evaluation unknown field", "/evaluation", R"({"task": "e", "every_n_steps": 5, "x": 3})", "evaluation: unknown field \"x\"");

    // Ranges and relations between fields.
    set("hidden not divisible by heads", "/model/num_heads", "3", "model.hidden_size: 256 is not a multiple of model.num_heads (3)");
    set("micro batch above target", "/training/micro_batch_size", "512",
        "training.micro_batch_size: 512 exceeds training.target_batch_size (256)");
    set("max_positions below sequence_length", "/model/max_positions", "32",
        "model.max_positions: 32 is less than training.sequence_length (64)");
    set("sequence_length 7", "/training/sequence_length", "7", "training.sequence_length: must be at least 8");
    set("mask_probability 0", "/training/mask_probability", "0", "training.mask_probability: expected a number in (0, 1)");
    set("mask_probability 1", "/training/mask_probability", "1.0", "training.mask_probability: expected a number in (0, 1)");
    set("validation_fraction 0.5", "/corpus/validation_fraction", "0.5", "corpus.validation_fraction: expected a number in [0, 0.5)");
    set("validation_fraction negative", "/corpus/validation_fraction", "-0.01", "corpus.validation_fraction: expected a number in [0, 0.5)");
    set("empty corpus", "/corpus/files", "[]", "corpus.files: expected at least one file");
    set("beta1 1", "/optimizer/beta1", "1", "optimizer.beta1: expected a number in (0, 1)");
    set("beta2 0", "/optimizer/beta2", "0.0", "optimizer.beta2: expected a number in (0, 1)");
    set("learning_rate 0", "/optimizer/learning_rate", "0", "optimizer.learning_rate: expected a number > 0");
    set("learning_rate negative", "/optimizer/learning_rate", "-0.1", "optimizer.learning_rate: expected a number > 0");
    set("negative weight_decay", "/optimizer/weight_decay", "-0.01", "optimizer.weight_decay: expected a number >= 0");
    set("warmup negative", "/schedule/warmup_steps", "-1", "schedule.warmup_steps: expected a non-negative integer, got -1");
    set("warmup equals total", "/schedule/warmup_steps", "2000", "schedule.warmup_steps: must be less than schedule.total_steps (2000)");
}

void TestManifest::rejectsInvalidField()
{
    QFETCH(QString, op);
    QFETCH(QString, pointer);
    QFETCH(QString, value);
    QFETCH(QString, expected);

    const auto message = parseError(edited(op, pointer, value));
    QVERIFY2(message.has_value(), "the invalid manifest was accepted");
    QVERIFY2(message->startsWith(expected), qPrintable(QStringLiteral("got: ") + *message));
}

void TestManifest::acceptsBoundaryValues_data()
{
    QTest::addColumn<QString>("op");
    QTest::addColumn<QString>("pointer");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("stored"); // what toJson writes at `pointer` afterwards

    QTest::newRow("description optional") << "remove" << "/description" << "" << "\"\"";
    QTest::newRow("empty description") << "set" << "/description" << "\"\"" << "\"\"";
    QTest::newRow("empty lead") << "set" << "/lead" << "\"\"" << "\"\"";
    QTest::newRow("no warmup") << "set" << "/schedule/warmup_steps" << "0" << "0";
    QTest::newRow("warmup one below total") << "set" << "/schedule/warmup_steps" << "1999" << "1999";
    QTest::newRow("no validation split") << "set" << "/corpus/validation_fraction" << "0" << "0.0";
    QTest::newRow("clipping disabled") << "set" << "/training/max_grad_norm" << "0" << "0.0";
    QTest::newRow("integer for a number") << "set" << "/optimizer/learning_rate" << "1" << "1.0";
    QTest::newRow("micro equals target") << "set" << "/training/micro_batch_size" << "256" << "256";
    QTest::newRow("max_positions equals sequence_length") << "set" << "/model/max_positions" << "64" << "64";
    QTest::newRow("sequence_length 8") << "set" << "/training/sequence_length" << "8" << "8";
    QTest::newRow("custom preset") << "set" << "/model/preset" << "\"custom\"" << "\"custom\"";
    QTest::newRow("64-char run_id")
        << "set" << "/run_id" << "\"A.b_c-0123456789012345678901234567890123456789012345678901234567\""
        << "\"A.b_c-0123456789012345678901234567890123456789012345678901234567\"";
    QTest::newRow("no peers") << "set" << "/bootstrap_peers" << "[]" << "[]";
    QTest::newRow("peer forms") << "set" << "/bootstrap_peers" << R"(["[::1]:31337", "10.0.0.1:1", "peer.example.org:65535"])"
                                << R"(["[::1]:31337", "10.0.0.1:1", "peer.example.org:65535"])";
    QTest::newRow("absolute corpus path") << "set" << "/corpus/files/0/path" << "\"/data/corpus.txt\""
                                          << "\"/data/corpus.txt\"";
    QTest::newRow("closed run") << "set" << "/access" << "\"closed\"" << "\"closed\"";
    QTest::newRow("aggregation") << "set" << "/aggregation" << R"({"rule": "centered-clip", "radius": 1})"
                                 << R"({"rule": "centered-clip", "radius": 1.0})";
    QTest::newRow("aggregation rate bound") << "set" << "/aggregation" << R"({"rule": "mean", "max_rate_over_median": 40})"
                                            << R"({"max_rate_over_median": 40.0, "radius": 2.0, "rule": "mean"})";
    QTest::newRow("evaluation") << "set" << "/evaluation" << R"({"task": "eval/sib", "every_n_steps": 1})"
                                << R"({"task": "eval/sib", "every_n_steps": 1})";
}

void TestManifest::optionalSectionsDefault()
{
    const auto absent = dedloc::parseRunManifest(edited(QStringLiteral("set"), QStringLiteral("/name"), QStringLiteral("\"n\"")), {});
    QCOMPARE(absent.closed, false);
    QVERIFY(absent.evaluation.task.empty());
    QCOMPARE(absent.evaluation.everyNSteps, 0);
    // Written only when set: manifests signed before the fields existed keep their bytes.
    QVERIFY(!json::parse(dedloc::toJson(absent)).contains("evaluation"));
    const auto open = dedloc::parseRunManifest(edited(QStringLiteral("set"), QStringLiteral("/access"), QStringLiteral("\"open\"")), {});
    QCOMPARE(open.closed, false);
    QVERIFY(!json::parse(dedloc::toJson(open)).contains("access"));
    const auto closed = dedloc::parseRunManifest(edited(QStringLiteral("set"), QStringLiteral("/access"), QStringLiteral("\"closed\"")), {});
    QCOMPARE(closed.closed, true);
    // Aggregation: absent, CenteredClip in an open run and the exact mean in a closed one; unwritten.
    QVERIFY(open.aggregation().rule == dedloc::AggregationRule::CenteredClip);
    QCOMPARE(open.aggregation().radius, 2.0);
    QVERIFY(closed.aggregation().rule == dedloc::AggregationRule::Mean);
    QVERIFY(!json::parse(dedloc::toJson(open)).contains("aggregation"));
    const auto meanOpen = dedloc::parseRunManifest(
        edited(QStringLiteral("set"), QStringLiteral("/aggregation"), QStringLiteral(R"({"rule": "mean"})")), {});
    QVERIFY(meanOpen.aggregation().rule == dedloc::AggregationRule::Mean);
    // The rate bound: 8 in an open run, none in a closed one, the manifest's where it says.
    QCOMPARE(open.maxRateOverMedian(), 8.0);
    QVERIFY(std::isinf(closed.maxRateOverMedian()));
    const auto bounded = dedloc::parseRunManifest(
        edited(QStringLiteral("set"), QStringLiteral("/aggregation"),
               QStringLiteral(R"({"rule": "mean", "max_rate_over_median": 40})")), {});
    QCOMPARE(bounded.maxRateOverMedian(), 40.0);
    // The averaging section has a test of its own (tst_averagingspec).
    const auto evaluated = dedloc::parseRunManifest(
        edited(QStringLiteral("set"), QStringLiteral("/evaluation"), QStringLiteral(R"({"task": "eval/sib", "every_n_steps": 50})")),
        "/runs/demo");
    QCOMPARE(evaluated.resolve(evaluated.evaluation.task), std::filesystem::path("/runs/demo/eval/sib"));
    QCOMPARE(evaluated.evaluation.everyNSteps, 50);
}

void TestManifest::acceptsBoundaryValues()
{
    QFETCH(QString, op);
    QFETCH(QString, pointer);
    QFETCH(QString, value);
    QFETCH(QString, stored);

    const auto text = edited(op, pointer, value);
    const auto message = parseError(text);
    QVERIFY2(!message.has_value(), qPrintable(message.value_or(QString())));
    const json written = json::parse(dedloc::toJson(dedloc::parseRunManifest(text, {})));
    const json expected = json::parse(stored.toStdString());
    const json actual = written.at(json::json_pointer(pointer.toStdString()));
    QVERIFY2(actual == expected, actual.dump().c_str());
}

void TestManifest::rejectsMalformedJson_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("expected"); // contained in the message

    QTest::newRow("empty") << "" << "manifest: invalid JSON: parse error at line 1, column 1";
    QTest::newRow("trailing comma") << "{\n  \"run_id\": \"x\",\n}" << "manifest: invalid JSON: parse error at line 3, column 1";
    QTest::newRow("truncated") << "{\"model\": {\"hidden_size\": 2" << "manifest: invalid JSON: parse error at line 1, column 28";
    QTest::newRow("comment") << "// run\n{}" << "manifest: invalid JSON: parse error at line 1, column 1";
    QTest::newRow("duplicate key") << R"({"run_id": "a", "model": {"num_heads": 4, "num_heads": 8}})"
                                   << "manifest: duplicate key \"num_heads\"";
}

void TestManifest::rejectsMalformedJson()
{
    QFETCH(QString, text);
    QFETCH(QString, expected);

    const auto message = parseError(text.toStdString());
    QVERIFY2(message.has_value(), "malformed JSON was accepted");
    QVERIFY2(message->contains(expected), qPrintable(QStringLiteral("got: ") + *message));
}

void TestManifest::compressionSpellings_data()
{
    QTest::addColumn<QString>("spelling");
    QTest::addColumn<int>("value");

    QTest::newRow("none") << "none" << int(Compression::None);
    QTest::newRow("fp16") << "fp16" << int(Compression::Fp16);
    QTest::newRow("uniform8bit") << "uniform8bit" << int(Compression::Uniform8Bit);
    QTest::newRow("blockwise8bit") << "blockwise8bit" << int(Compression::Blockwise8Bit);
    QTest::newRow("size_adaptive") << "size_adaptive" << int(Compression::SizeAdaptive);
    QTest::newRow("topk4bit") << "topk4bit" << int(Compression::TopK4Bit);
}

void TestManifest::compressionSpellings()
{
    QFETCH(QString, spelling);
    QFETCH(int, value);

    const auto compression = static_cast<Compression>(value);
    QCOMPARE(QString::fromLatin1(dedloc::compressionName(compression)), spelling);
    const auto text = edited("set", "/compression", QLatin1Char('"') + spelling + QLatin1Char('"'));
    const RunManifest m = dedloc::parseRunManifest(text, {});
    QCOMPARE(m.compression, compression);
    QCOMPARE(json::parse(dedloc::toJson(m)).at("compression").get<std::string>(), spelling.toStdString());
}

void TestManifest::loadSetsBaseDirAndResolves()
{
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const fs::path runDir = fs::path(tmp.path().toStdString()) / "run";
    fs::create_directories(runDir);
    dedloc::writeFileAtomically(runDir / "manifest.json", kValidManifest);

    const RunManifest m = dedloc::loadRunManifest(runDir / "manifest.json");
    QCOMPARE(m.runId, std::string("bn-albert-demo"));
    QCOMPARE(m.baseDir, runDir);
    QCOMPARE(m.resolve("corpus/a.txt"), runDir / "corpus" / "a.txt");
    QCOMPARE(m.resolve("/elsewhere/b.txt"), fs::path("/elsewhere/b.txt"));
}

void TestManifest::loadReportsMissingFile()
{
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const fs::path missing = fs::path(tmp.path().toStdString()) / "nope" / "manifest.json";
    try {
        (void)dedloc::loadRunManifest(missing);
        QFAIL("loading a missing manifest succeeded");
    } catch (const dedloc::Error &e) {
        const QString message = QString::fromStdString(e.what());
        QVERIFY2(message.contains(QString::fromStdString(missing.string())), qPrintable(message));
        QVERIFY2(message.contains(QLatin1String("does not exist")), qPrintable(message));
    }
}

void TestManifest::loadNamesFileOnError()
{
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const fs::path file = fs::path(tmp.path().toStdString()) / "manifest.json";
    dedloc::writeFileAtomically(file, edited("set", "/model/num_heads", "3"));
    try {
        (void)dedloc::loadRunManifest(file);
        QFAIL("an invalid manifest file was accepted");
    } catch (const dedloc::Error &e) {
        const QString message = QString::fromStdString(e.what());
        QVERIFY2(message.startsWith(QString::fromStdString(file.string() + ": model.hidden_size: ")), qPrintable(message));
    }
}

void TestManifest::verifyRunFiles_data()
{
    QTest::addColumn<QString>("damage"); // "", "change" or "remove"
    QTest::addColumn<QString>("target"); // which file: "tokenizer" or "corpus"

    QTest::newRow("intact") << "" << "";
    QTest::newRow("tokenizer byte changed") << "change" << "tokenizer";
    QTest::newRow("corpus byte changed") << "change" << "corpus";
    QTest::newRow("tokenizer missing") << "remove" << "tokenizer";
    QTest::newRow("corpus missing") << "remove" << "corpus";
}

void TestManifest::verifyRunFiles()
{
    QFETCH(QString, damage);
    QFETCH(QString, target);

    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const fs::path root = tmp.path().toStdString();
    const RunManifest m = dedloc::test::writeVerifiableRun(root);

    // The second corpus file, so that a check that stops after the first one fails.
    const fs::path victim = target == QLatin1String("tokenizer") ? root / "tokenizer.model" : root / "corpus" / "b.txt";
    const std::string expectedHash = target == QLatin1String("tokenizer") ? m.tokenizer.sha256 : m.corpus.files[1].sha256;
    if (damage == QLatin1String("change"))
        flipOneByte(victim);
    else if (damage == QLatin1String("remove"))
        fs::remove(victim);

    QString message;
    try {
        dedloc::verifyRunFiles(m);
    } catch (const dedloc::Error &e) {
        message = QString::fromStdString(e.what());
    }
    if (damage.isEmpty()) {
        QVERIFY2(message.isEmpty(), qPrintable(message));
        return;
    }
    QVERIFY2(!message.isEmpty(), "verifyRunFiles accepted a damaged run");
    QVERIFY2(message.startsWith(target + QLatin1String(" file ") + QString::fromStdString(victim.string())), qPrintable(message));
    if (damage == QLatin1String("change")) {
        const std::string actualHash = dedloc::sha256File(victim);
        QVERIFY2(message.contains(QLatin1String("SHA-256 mismatch")), qPrintable(message));
        QVERIFY2(message.contains(QString::fromStdString("manifest says " + expectedHash)), qPrintable(message));
        QVERIFY2(message.contains(QString::fromStdString("file has " + actualHash)), qPrintable(message));
    } else {
        QVERIFY2(message.contains(QLatin1String("does not exist")), qPrintable(message));
    }
}

void TestManifest::bundledManifestIsValid()
{
    const fs::path file = dedloc::test::defaultManifest();
    if (!fs::exists(file))
        QSKIP("resources/default-run/manifest.json is not there yet");
    const RunManifest m = dedloc::loadRunManifest(file);
    QCOMPARE(m.baseDir, file.parent_path());
    dedloc::verifyRunFiles(m); // throws (and so fails the test) naming the file at fault
    QCOMPARE(dedloc::toJson(dedloc::parseRunManifest(dedloc::toJson(m), m.baseDir)), dedloc::toJson(m));
}

QTEST_APPLESS_MAIN(TestManifest)
#include "tst_manifest.moc"
