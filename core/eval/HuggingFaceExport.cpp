#include "eval/HuggingFaceExport.h"

#include "eval/SafeTensors.h"
#include "model/Tokenizer.h"
#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"

#include <nlohmann/json.hpp>

#include <map>
#include <sstream>

namespace dedloc {

namespace {

using Shape = std::vector<std::int64_t>;
using ordered_json = nlohmann::ordered_json;

constexpr const char *LayerPrefix = "albert.encoder.albert_layer_groups.0.albert_layers.0.";

// Every parameter of AlbertMlmImpl (model/Albert.h) by module name, with its shape.
std::map<std::string, Shape> expectedParameters(const ModelShape &s)
{
    const std::int64_t V = s.vocabSize, E = s.embeddingSize, H = s.hiddenSize, I = s.intermediateSize,
                       P = s.maxPositions;
    std::map<std::string, Shape> out = {
        {"token_embedding.weight", {V, E}},
        {"position_embedding.weight", {P, E}},
        {"embedding_projection.weight", {H, E}},
        {"embedding_projection.bias", {H}},
        {"shared_qkv.weight", {3 * H, H}},
        {"shared_qkv.bias", {3 * H}},
        {"shared_attention_out.weight", {H, H}},
        {"shared_attention_out.bias", {H}},
        {"shared_ffn_in.weight", {I, H}},
        {"shared_ffn_in.bias", {I}},
        {"shared_ffn_out.weight", {H, I}},
        {"shared_ffn_out.bias", {H}},
        {"head_transform.weight", {E, H}},
        {"head_transform.bias", {E}},
        {"head_decoder_bias", {V}},
    };
    for (const auto &[norm, width] :
         {std::pair{"embedding_norm", E}, {"shared_attention_norm", H}, {"shared_ffn_norm", H}, {"head_norm", E}}) {
        out[std::string(norm) + ".weight"] = {width};
        out[std::string(norm) + ".bias"] = {width};
    }
    return out;
}

// The checkpoint's parameters by module name, checked against the manifest's model shape.
std::map<std::string, torch::Tensor> checkedParameters(const RunManifest &manifest, const Checkpoint &checkpoint)
{
    const auto runId = checkpoint.meta.is_object() ? checkpoint.meta.value("run_id", manifest.runId) : manifest.runId;
    if (runId != manifest.runId)
        throw Error("the checkpoint belongs to run \"" + runId + "\", not \"" + manifest.runId + "\"");
    const auto expected = expectedParameters(manifest.model);
    std::map<std::string, torch::Tensor> found;
    const auto prefix = checkpointParameterName("");
    for (const auto &t : checkpoint.tensors) {
        if (!t.name.starts_with(prefix))
            continue; // LAMB's moments and anything else that is not a weight
        const auto name = t.name.substr(prefix.size());
        const auto it = expected.find(name);
        if (it == expected.end())
            throw Error("the checkpoint's tensor " + t.name + " is not a parameter of the manifest's ALBERT");
        if (t.tensor.sizes() != at::IntArrayRef(it->second))
            throw Error("the checkpoint's tensor " + t.name + " has the shape " + c10::str(t.tensor.sizes()) +
                        ", the manifest's model needs " + c10::str(at::IntArrayRef(it->second)));
        found[name] = t.tensor.detach().to(torch::kCPU, torch::kFloat).contiguous();
    }
    for (const auto &[name, shape] : expected) {
        if (!found.contains(name))
            throw Error("the checkpoint has no tensor " + checkpointParameterName(name) +
                        ": it is not of the manifest's ALBERT");
    }
    return found;
}

// model.safetensors' tensors in file order, under modeling_albert.py's names.
std::vector<std::pair<std::string, torch::Tensor>> huggingFaceTensors(const ModelShape &shape,
                                                                      const std::map<std::string, torch::Tensor> &p)
{
    const std::int64_t H = shape.hiddenSize;
    const auto qkvWeight = p.at("shared_qkv.weight").split(H, 0);
    const auto qkvBias = p.at("shared_qkv.bias").split(H, 0);
    std::vector<std::pair<std::string, torch::Tensor>> out = {
        {"albert.embeddings.word_embeddings.weight", p.at("token_embedding.weight")},
        {"albert.embeddings.position_embeddings.weight", p.at("position_embedding.weight")},
        {"albert.embeddings.token_type_embeddings.weight", torch::zeros({2, shape.embeddingSize})},
        {"albert.embeddings.LayerNorm.weight", p.at("embedding_norm.weight")},
        {"albert.embeddings.LayerNorm.bias", p.at("embedding_norm.bias")},
        {"albert.encoder.embedding_hidden_mapping_in.weight", p.at("embedding_projection.weight")},
        {"albert.encoder.embedding_hidden_mapping_in.bias", p.at("embedding_projection.bias")},
    };
    const std::pair<const char *, torch::Tensor> layer[] = {
        {"attention.query.weight", qkvWeight[0]},
        {"attention.query.bias", qkvBias[0]},
        {"attention.key.weight", qkvWeight[1]},
        {"attention.key.bias", qkvBias[1]},
        {"attention.value.weight", qkvWeight[2]},
        {"attention.value.bias", qkvBias[2]},
        {"attention.dense.weight", p.at("shared_attention_out.weight")},
        {"attention.dense.bias", p.at("shared_attention_out.bias")},
        {"attention.LayerNorm.weight", p.at("shared_attention_norm.weight")},
        {"attention.LayerNorm.bias", p.at("shared_attention_norm.bias")},
        {"ffn.weight", p.at("shared_ffn_in.weight")},
        {"ffn.bias", p.at("shared_ffn_in.bias")},
        {"ffn_output.weight", p.at("shared_ffn_out.weight")},
        {"ffn_output.bias", p.at("shared_ffn_out.bias")},
        {"full_layer_layer_norm.weight", p.at("shared_ffn_norm.weight")},
        {"full_layer_layer_norm.bias", p.at("shared_ffn_norm.bias")},
    };
    for (const auto &[name, tensor] : layer)
        out.emplace_back(LayerPrefix + std::string(name), tensor.contiguous());
    out.insert(out.end(), {
                              {"predictions.bias", p.at("head_decoder_bias")},
                              {"predictions.dense.weight", p.at("head_transform.weight")},
                              {"predictions.dense.bias", p.at("head_transform.bias")},
                              {"predictions.LayerNorm.weight", p.at("head_norm.weight")},
                              {"predictions.LayerNorm.bias", p.at("head_norm.bias")},
                              {"predictions.decoder.weight", p.at("token_embedding.weight")},
                              {"predictions.decoder.bias", p.at("head_decoder_bias")},
                          });
    return out;
}

void writeModel(const std::filesystem::path &file, const std::vector<std::pair<std::string, torch::Tensor>> &tensors,
                const RunManifest &manifest, const Checkpoint &checkpoint)
{
    std::vector<SafeTensor> views;
    for (const auto &[name, tensor] : tensors)
        views.push_back(
            {name, tensor.sizes().vec(), {tensor.data_ptr<float>(), static_cast<std::size_t>(tensor.numel())}});
    std::map<std::string, std::string> metadata = {{"format", "pt"}, {"dedloc_run_id", manifest.runId}};
    if (checkpoint.meta.is_object() && checkpoint.meta.contains("step"))
        metadata["dedloc_step"] = checkpoint.meta.at("step").dump();
    writeSafeTensors(file, views, metadata);
}

ordered_json configJson(const ModelShape &s)
{
    return {{"architectures", {"AlbertForMaskedLM"}},
            {"model_type", "albert"},
            {"vocab_size", s.vocabSize},
            {"embedding_size", s.embeddingSize},
            {"hidden_size", s.hiddenSize},
            {"num_hidden_layers", s.numLayers},
            {"num_hidden_groups", 1},
            {"inner_group_num", 1},
            {"num_attention_heads", s.numHeads},
            {"intermediate_size", s.intermediateSize},
            {"max_position_embeddings", s.maxPositions},
            {"type_vocab_size", 2},
            {"hidden_act", "gelu"},
            {"layer_norm_eps", 1e-12},
            {"hidden_dropout_prob", 0.0},
            {"attention_probs_dropout_prob", 0.0},
            {"classifier_dropout_prob", 0.1},
            {"initializer_range", 0.02},
            {"position_embedding_type", "absolute"},
            {"pad_token_id", SpecialTokens::Pad},
            {"bos_token_id", SpecialTokens::Cls},
            {"eos_token_id", SpecialTokens::Sep},
            {"tie_word_embeddings", true},
            {"torch_dtype", "float32"}};
}

ordered_json specialTokensJson()
{
    return {{"bos_token", "[CLS]"}, {"eos_token", "[SEP]"}, {"unk_token", "[UNK]"},  {"sep_token", "[SEP]"},
            {"pad_token", "[PAD]"}, {"cls_token", "[CLS]"}, {"mask_token", "[MASK]"}};
}

ordered_json tokenizerConfigJson(const RunManifest &manifest)
{
    ordered_json config = {{"tokenizer_class", "AlbertTokenizer"},
                           {"do_lower_case", false},
                           {"remove_space", true},
                           {"keep_accents", true},
                           {"model_max_length", manifest.training.sequenceLength}};
    config.update(specialTokensJson());
    return config;
}

std::string metaText(const nlohmann::json &meta, const char *key)
{
    if (!meta.is_object() || !meta.contains(key))
        return "unknown";
    return meta.at(key).dump();
}

std::string modelCard(const RunManifest &manifest, const Checkpoint &checkpoint)
{
    const auto &m = manifest.model;
    const auto &meta = checkpoint.meta;
    const auto samples = meta.is_object() && meta.contains("contribution")
                             ? metaText(meta.at("contribution"), "samples")
                             : std::string("unknown");
    std::ostringstream card;
    card << "---\nlibrary_name: transformers\npipeline_tag: fill-mask\ntags:\n- albert\n- dedloc\n---\n\n"
         << "# " << manifest.name << "\n\n"
         << manifest.description << "\n\n"
         << "An ALBERT masked-language model trained collaboratively with DeDLOC Desktop.\n\n"
         << "| | |\n| --- | --- |\n"
         << "| run | `" << manifest.runId << "` (lead: " << manifest.lead << ") |\n"
         << "| epoch (optimizer steps) | " << metaText(meta, "step") << " |\n"
         << "| samples per step (target batch) | " << manifest.training.targetBatchSize << " |\n"
         << "| samples computed by the exporting peer | " << samples << " |\n"
         << "| sequence length | " << manifest.training.sequenceLength << " tokens |\n"
         << "| shape | V " << m.vocabSize << ", E " << m.embeddingSize << ", H " << m.hiddenSize << ", L "
         << m.numLayers << " (one shared layer), heads " << m.numHeads << ", FFN " << m.intermediateSize
         << ", positions " << m.maxPositions << " |\n\n"
         << "## Use\n\n```python\nfrom transformers import AlbertForMaskedLM, AlbertTokenizer\n"
         << "tokenizer = AlbertTokenizer.from_pretrained(\"path/to/this/folder\")\n"
         << "model = AlbertForMaskedLM.from_pretrained(\"path/to/this/folder\")\n```\n\n"
         << "The model was trained without an attention mask on unpadded sequences; token type ids are "
            "ignored (their embedding is zero).\n\n"
         << "## Licence\n\nThe weights are derived from the run's training data: the licence of that data "
            "applies to them.\n";
    return card.str();
}

// The run's tokenizer, checked against its manifest hash and the model's vocabulary.
std::filesystem::path checkedTokenizer(const RunManifest &manifest)
{
    const auto file = manifest.resolve(manifest.tokenizer.path);
    if (!manifest.tokenizer.sha256.empty() && sha256File(file) != manifest.tokenizer.sha256)
        throw Error("the tokenizer " + file.string() + " differs from the one the run manifest names (SHA-256)");
    const Tokenizer tokenizer(file);
    if (tokenizer.vocabSize() != manifest.model.vocabSize)
        throw Error("the tokenizer " + file.string() + " has " + std::to_string(tokenizer.vocabSize()) +
                    " pieces, the model " + std::to_string(manifest.model.vocabSize));
    return file;
}

} // namespace

std::vector<std::filesystem::path> exportHuggingFace(const RunManifest &manifest, const Checkpoint &checkpoint,
                                                     const std::filesystem::path &outDir)
{
    const auto tensors = huggingFaceTensors(manifest.model, checkedParameters(manifest, checkpoint));
    const auto tokenizer = checkedTokenizer(manifest);
    std::error_code error;
    std::filesystem::create_directories(outDir, error);
    if (error)
        throw Error("cannot create the export folder " + outDir.string() + ": " + error.message());

    std::vector<std::filesystem::path> written;
    auto writeText = [&](const char *name, const std::string &text) {
        writeFileAtomically(outDir / name, text);
        written.push_back(outDir / name);
    };
    writeText("spiece.model", readWholeFile(tokenizer));
    writeText("tokenizer_config.json", tokenizerConfigJson(manifest).dump(2) + "\n");
    writeText("special_tokens_map.json", specialTokensJson().dump(2) + "\n");
    writeModel(outDir / "model.safetensors", tensors, manifest, checkpoint);
    written.push_back(outDir / "model.safetensors");
    writeText("config.json", configJson(manifest.model).dump(2) + "\n");
    writeText("README.md", modelCard(manifest, checkpoint));
    log::info("eval", "exported run " + manifest.runId + " at epoch " + metaText(checkpoint.meta, "step") +
                          " to the Hugging Face layout in " + outDir.string());
    return written;
}

} // namespace dedloc
