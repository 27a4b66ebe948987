// The export to the Hugging Face layout (eval/HuggingFaceExport.h): a trainer's checkpoint, its
// parameters replaced by random non-trivial values, is exported; every tensor read back with the
// specification's reader (tests/support/SafeTensorsReader.h) equals the checkpoint's bit for bit
// under transformers' names; config.json and the tokenizer files say what AlbertConfig and
// AlbertTokenizer need; mismatched checkpoints are refused before anything is written. Where
// python3 has torch, a reference of AlbertForMaskedLM's forward pass (tests/support/
// albert_reference.py) reads the exported folder and its logits match AlbertMlm::mlmLogits.
#include "eval/HuggingFaceExport.h"
#include "model/Albert.h"
#include "model/Tokenizer.h"
#include "train/Checkpoint.h"
#include "train/Trainer.h"
#include "util/AtomicFile.h"
#include "util/Error.h"

#include "SafeTensorsReader.h"
#include "TestSupport.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <bit>
#include <cstring>
#include <fstream>
#include <set>

using namespace dedloc;
using dedloc::test::errorOf;

namespace {

constexpr int V = 8000, E = 16, H = 32, L = 2, Heads = 4, I = 64, P = 32; // V: the bundled tokenizer's

std::vector<std::uint32_t> bitsOf(const torch::Tensor &t)
{
    const auto c = t.detach().to(torch::kFloat).contiguous();
    std::vector<std::uint32_t> out(static_cast<std::size_t>(c.numel()));
    std::memcpy(out.data(), c.data_ptr<float>(), out.size() * sizeof(float));
    return out;
}

std::vector<std::uint32_t> bitsOf(const std::vector<float> &values)
{
    std::vector<std::uint32_t> out;
    for (const float v : values)
        out.push_back(std::bit_cast<std::uint32_t>(v));
    return out;
}

nlohmann::json readJson(const std::filesystem::path &file)
{
    return nlohmann::json::parse(readWholeFile(file));
}

// A python3 that imports torch: $DEDLOC_PYTHON, then python3 on the PATH, then /usr/bin/python3.
QString pythonWithTorch()
{
    QStringList candidates = {QStringLiteral("python3"), QStringLiteral("/usr/bin/python3")};
    if (qEnvironmentVariableIsSet("DEDLOC_PYTHON"))
        candidates.prepend(qEnvironmentVariable("DEDLOC_PYTHON"));
    for (const auto &python : candidates) {
        QProcess probe;
        probe.start(python, {QStringLiteral("-c"), QStringLiteral("import torch")});
        if (probe.waitForFinished(120000) && probe.exitStatus() == QProcess::NormalExit && probe.exitCode() == 0)
            return python;
    }
    return {};
}

} // namespace

class TestHuggingFaceExport final : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    RunManifest m_run;
    Checkpoint m_checkpoint;
    AlbertMlm m_model{nullptr};
    mutable std::set<std::string> m_compared; // parameters the tensor comparison looked up

    std::filesystem::path dir() const { return m_dir.path().toStdString(); }
    std::filesystem::path exported() const { return dir() / "export"; }

    // The checkpoint's value of model parameter `name`.
    torch::Tensor parameter(const std::string &name) const
    {
        for (const auto &t : m_checkpoint.tensors)
            if (t.name == checkpointParameterName(name)) {
                m_compared.insert(name);
                return t.tensor;
            }
        throw Error("no " + name + " in the checkpoint");
    }

  private Q_SLOTS:
    void initTestCase()
    {
        m_run = test::tinyRun(dir(), 60000);
        m_run.model = ModelShape{"custom", V, E, H, L, Heads, I, P};
        m_run.training.sequenceLength = P;
        {
            // The checkpoint as a trainer writes it: one step, so LAMB's moments are in it too.
            const Tokenizer tokenizer(m_run.resolve(m_run.tokenizer.path));
            Trainer trainer(m_run, tokenizer, TrainerConfig{5, false, 0, {}});
            QVERIFY(trainer.trainStep().applied);
            trainer.saveCheckpoint(dir() / "checkpoints");
        }
        m_checkpoint = readCheckpointFile(CheckpointStore(dir() / "checkpoints").newestPath());
        QCOMPARE(m_checkpoint.meta.at("step").get<long>(), 1L);

        // Random, non-trivial values for every parameter (biases and LayerNorm gains included).
        torch::manual_seed(20240611);
        m_model = AlbertMlm(m_run.model);
        torch::NoGradGuard noGrad;
        const auto named = m_model->named_parameters();
        QCOMPARE(m_checkpoint.tensors.size(), 3 * named.size()); // parameters, exp_avg, exp_avg_sq
        for (auto &p : named) {
            p.value().normal_(0.0, 0.3);
            if (p.key().find("norm.weight") != std::string::npos)
                p.value().add_(1.0);
            bool replaced = false;
            for (auto &t : m_checkpoint.tensors) {
                if (t.name == checkpointParameterName(p.key())) {
                    QVERIFY(t.tensor.sizes() == p.value().sizes());
                    t.tensor = p.value().detach().clone();
                    replaced = true;
                }
            }
            QVERIFY2(replaced, p.key().c_str());
        }
        const auto written = exportHuggingFace(m_run, m_checkpoint, exported());
        QStringList names;
        for (const auto &f : written) {
            QVERIFY(std::filesystem::exists(f));
            names << QString::fromStdString(f.filename().string());
        }
        QCOMPARE(names, QStringList({"spiece.model", "tokenizer_config.json", "special_tokens_map.json",
                                     "model.safetensors", "config.json", "README.md"}));
    }

    void tensorsEqualTheCheckpointsUnderTransformersNames()
    {
        const auto file = test::readSafeTensors(exported() / "model.safetensors");
        QCOMPARE(file.metadata.at("format"), std::string("pt"));
        QCOMPARE(file.metadata.at("dedloc_run_id"), m_run.runId);
        const std::string layer = "albert.encoder.albert_layer_groups.0.albert_layers.0.";
        const auto qkvW = parameter("shared_qkv.weight"), qkvB = parameter("shared_qkv.bias");
        const std::map<std::string, torch::Tensor> expected = {
            {"albert.embeddings.word_embeddings.weight", parameter("token_embedding.weight")},
            {"albert.embeddings.position_embeddings.weight", parameter("position_embedding.weight")},
            {"albert.embeddings.token_type_embeddings.weight", torch::zeros({2, E})},
            {"albert.embeddings.LayerNorm.weight", parameter("embedding_norm.weight")},
            {"albert.embeddings.LayerNorm.bias", parameter("embedding_norm.bias")},
            {"albert.encoder.embedding_hidden_mapping_in.weight", parameter("embedding_projection.weight")},
            {"albert.encoder.embedding_hidden_mapping_in.bias", parameter("embedding_projection.bias")},
            {layer + "attention.query.weight", qkvW.slice(0, 0, H)},
            {layer + "attention.query.bias", qkvB.slice(0, 0, H)},
            {layer + "attention.key.weight", qkvW.slice(0, H, 2 * H)},
            {layer + "attention.key.bias", qkvB.slice(0, H, 2 * H)},
            {layer + "attention.value.weight", qkvW.slice(0, 2 * H, 3 * H)},
            {layer + "attention.value.bias", qkvB.slice(0, 2 * H, 3 * H)},
            {layer + "attention.dense.weight", parameter("shared_attention_out.weight")},
            {layer + "attention.dense.bias", parameter("shared_attention_out.bias")},
            {layer + "attention.LayerNorm.weight", parameter("shared_attention_norm.weight")},
            {layer + "attention.LayerNorm.bias", parameter("shared_attention_norm.bias")},
            {layer + "ffn.weight", parameter("shared_ffn_in.weight")},
            {layer + "ffn.bias", parameter("shared_ffn_in.bias")},
            {layer + "ffn_output.weight", parameter("shared_ffn_out.weight")},
            {layer + "ffn_output.bias", parameter("shared_ffn_out.bias")},
            {layer + "full_layer_layer_norm.weight", parameter("shared_ffn_norm.weight")},
            {layer + "full_layer_layer_norm.bias", parameter("shared_ffn_norm.bias")},
            {"predictions.bias", parameter("head_decoder_bias")},
            {"predictions.dense.weight", parameter("head_transform.weight")},
            {"predictions.dense.bias", parameter("head_transform.bias")},
            {"predictions.LayerNorm.weight", parameter("head_norm.weight")},
            {"predictions.LayerNorm.bias", parameter("head_norm.bias")},
            {"predictions.decoder.weight", parameter("token_embedding.weight")},
            {"predictions.decoder.bias", parameter("head_decoder_bias")},
        };
        QCOMPARE(file.tensors.size(), expected.size()); // nothing else: no LAMB moments
        for (const auto &[name, tensor] : expected) {
            const auto *entry = file.find(name);
            QVERIFY2(entry, name.c_str());
            QCOMPARE(entry->dtype, std::string("F32"));
            QVERIFY2(entry->shape == tensor.sizes().vec(), name.c_str());
            QVERIFY2(bitsOf(entry->values) == bitsOf(tensor), name.c_str());
        }
        // Every parameter of the model reaches the file: the map above names each one.
        for (const auto &p : m_model->named_parameters())
            QVERIFY2(m_compared.contains(p.key()), p.key().c_str());
    }

    void configIsAnAlbertConfigOfTheRunsShape()
    {
        const auto c = readJson(exported() / "config.json");
        QVERIFY(c.at("model_type") == "albert");
        QVERIFY(c.at("architectures") == nlohmann::json::array({"AlbertForMaskedLM"}));
        const std::pair<const char *, int> ints[] = {{"vocab_size", V},
                                                     {"embedding_size", E},
                                                     {"hidden_size", H},
                                                     {"num_hidden_layers", L},
                                                     {"num_attention_heads", Heads},
                                                     {"intermediate_size", I},
                                                     {"max_position_embeddings", P},
                                                     {"type_vocab_size", 2},
                                                     {"num_hidden_groups", 1},
                                                     {"inner_group_num", 1},
                                                     {"pad_token_id", 0},
                                                     {"bos_token_id", 2},
                                                     {"eos_token_id", 3}};
        for (const auto &[key, value] : ints)
            QVERIFY2(c.at(key) == value, key);
        QVERIFY(c.at("hidden_act") == "gelu"); // exact erf GELU, as model/Albert.cpp's torch::gelu
        QCOMPARE(c.at("layer_norm_eps").get<double>(), 1e-12);
        QCOMPARE(c.at("hidden_dropout_prob").get<double>(), 0.0);
        QCOMPARE(c.at("attention_probs_dropout_prob").get<double>(), 0.0);
        QVERIFY(c.at("position_embedding_type") == "absolute");
        QVERIFY(c.at("torch_dtype") == "float32");
    }

    void tokenizerFilesNameOurSpecialPieces()
    {
        QCOMPARE(readWholeFile(exported() / "spiece.model"), readWholeFile(m_run.resolve(m_run.tokenizer.path)));
        const Tokenizer tokenizer(exported() / "spiece.model");
        const auto config = readJson(exported() / "tokenizer_config.json");
        const auto special = readJson(exported() / "special_tokens_map.json");
        QVERIFY(config.at("tokenizer_class") == "AlbertTokenizer");
        QVERIFY(config.at("do_lower_case") == false);
        QVERIFY(config.at("keep_accents") == true);
        QVERIFY(config.at("remove_space") == true);
        QCOMPARE(config.at("model_max_length").get<int>(), m_run.training.sequenceLength);
        const std::pair<const char *, int> tokens[] = {
            {"pad_token", SpecialTokens::Pad},  {"unk_token", SpecialTokens::Unk}, {"cls_token", SpecialTokens::Cls},
            {"bos_token", SpecialTokens::Cls},  {"sep_token", SpecialTokens::Sep}, {"eos_token", SpecialTokens::Sep},
            {"mask_token", SpecialTokens::Mask}};
        for (const auto &[key, id] : tokens) {
            QVERIFY2(special.at(key) == tokenizer.piece(id), key);
            QVERIFY2(config.at(key) == tokenizer.piece(id), key);
        }
    }

    void modelCardNamesTheRunAndEpoch()
    {
        const auto card = QString::fromStdString(readWholeFile(exported() / "README.md"));
        QVERIFY(card.contains(QString::fromStdString(m_run.runId)));
        QVERIFY(card.contains(QString::fromStdString(m_run.name)));
        QVERIFY(card.contains(QStringLiteral("| epoch (optimizer steps) | 1 |")));
        QVERIFY(card.contains(QStringLiteral("| samples computed by the exporting peer | 32 |")));
        QVERIFY(card.contains(QStringLiteral("licence of that data")));
    }

    void mismatchedCheckpointsAreRefusedBeforeWriting_data()
    {
        QTest::addColumn<QString>("change");
        QTest::addColumn<QString>("expected");
        QTest::newRow("manifest's shape differs")
            << "shape"
            << "param.shared_ffn_in.weight has the shape [64, 32], the manifest's model needs [128, 32]";
        QTest::newRow("missing parameter") << "missing"
                                           << "has no tensor param.head_norm.bias";
        QTest::newRow("foreign parameter") << "extra"
                                           << "param.pooler.weight is not a parameter";
        QTest::newRow("another run") << "run"
                                     << "belongs to run \"another\"";
    }

    void mismatchedCheckpointsAreRefusedBeforeWriting()
    {
        QFETCH(QString, change);
        QFETCH(QString, expected);
        auto run = m_run;
        auto checkpoint = m_checkpoint;
        if (change == "shape")
            run.model.intermediateSize = 2 * I;
        if (change == "missing")
            std::erase_if(checkpoint.tensors,
                          [](const auto &t) { return t.name == checkpointParameterName("head_norm.bias"); });
        if (change == "extra")
            checkpoint.tensors.push_back({"param.pooler.weight", torch::zeros({H, H})});
        if (change == "run")
            checkpoint.meta["run_id"] = "another";
        const auto out = dir() / ("refused-" + change.toStdString());
        const auto message = errorOf([&] { (void)exportHuggingFace(run, checkpoint, out); });
        QVERIFY2(message.contains(expected), qPrintable(message));
        QVERIFY(!std::filesystem::exists(out));
    }

    void mlmLogitsAgreeWithTheTrainingLoss()
    {
        torch::NoGradGuard noGrad;
        const auto ids = torch::randint(SpecialTokens::Count, V, {2, 10}, torch::kLong);
        auto labels = torch::full({2, 10}, -100L, torch::kLong);
        labels.index_put_({0, 3}, 17L);
        labels.index_put_({1, 7}, 4242L);
        const auto logits = m_model->mlmLogits(ids);
        QCOMPARE(logits.sizes().vec(), (std::vector<std::int64_t>{2, 10, V}));
        const auto picked = torch::stack({logits.index({0, 3}), logits.index({1, 7})});
        const auto loss = torch::nn::functional::cross_entropy(picked, torch::tensor({17L, 4242L}));
        QVERIFY(std::abs(loss.item<double>() - m_model->mlmLoss(ids, labels).item<double>()) < 1e-5);
    }

    void referenceForwardPassOfTheExportAgrees()
    {
        const QString python = pythonWithTorch();
        if (python.isEmpty())
            QSKIP("no python3 that imports torch (Debian: python3-torch); set DEDLOC_PYTHON to choose one");
        // [CLS] ... [SEP] with a [MASK] and ids across the vocabulary.
        const std::vector<std::vector<long>> sequences = {{2, 5, 100, 4, 7999, 1234, 3}, {2, 4000, 6, 4, 4, 250, 3}};
        const auto idsFile = dir() / "ids.txt";
        {
            std::ofstream out(idsFile);
            for (const auto &s : sequences) {
                for (const long id : s)
                    out << id << ' ';
                out << '\n';
            }
        }
        const auto logitsFile = dir() / "reference.f32";
        QProcess reference;
        reference.setProcessChannelMode(QProcess::MergedChannels);
        reference.start(python,
                        {QStringLiteral(DEDLOC_ALBERT_REFERENCE), QString::fromStdString(exported().string()),
                         QString::fromStdString(idsFile.string()), QString::fromStdString(logitsFile.string())});
        QVERIFY(reference.waitForFinished(300000));
        QVERIFY2(reference.exitCode() == 0, reference.readAll().constData());

        const auto bytes = readWholeFile(logitsFile);
        const std::int64_t B = 2, T = 7;
        QCOMPARE(bytes.size(), static_cast<std::size_t>(B * T * V) * sizeof(float));
        const auto theirs = torch::from_blob(const_cast<char *>(bytes.data()), {B, T, V}, torch::kFloat).clone();
        torch::NoGradGuard noGrad;
        torch::Tensor ids = torch::empty({B, T}, torch::kLong);
        for (std::int64_t b = 0; b < B; ++b)
            for (std::int64_t t = 0; t < T; ++t)
                ids.index_put_({b, t}, sequences[b][t]);
        const auto ours = m_model->mlmLogits(ids);
        const double difference = (ours - theirs).abs().max().item<double>();
        const double scale = theirs.abs().max().item<double>();
        qInfo("max |logit difference| %.3g over logits up to %.3g", difference, scale);
        QVERIFY2(scale > 0.5, "the logits are too small for the comparison to mean anything");
        QVERIFY2(difference < 1e-4, qPrintable(QString::number(difference)));
    }
};

QTEST_GUILESS_MAIN(TestHuggingFaceExport)
#include "tst_huggingfaceexport.moc"
