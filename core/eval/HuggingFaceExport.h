#pragma once
// Export of a trained checkpoint to the Hugging Face layout, so that `transformers` loads it as
// AlbertForMaskedLM (and the tokenizer as AlbertTokenizer) without this project's code.
//
// The directory gets:
//   config.json              AlbertConfig (configuration_albert.py): the run's ModelShape, one
//                            layer group of one layer (ALBERT's cross-layer sharing), exact erf
//                            GELU ("gelu", not "gelu_new"), LayerNorm eps 1e-12, no dropout
//   model.safetensors        the parameters under the names of transformers' modeling_albert.py
//                            (eval/SafeTensors.h; metadata {"format": "pt"})
//   spiece.model             the run's SentencePiece model, byte for byte
//   tokenizer_config.json    AlbertTokenizer with this project's special pieces ([PAD], [UNK],
//   special_tokens_map.json  [CLS], [SEP], [MASK]; model/Tokenizer.h), no lower-casing, accents
//                            kept (Bengali's combining signs), model_max_length = the run's
//                            training sequence length
//   README.md                a model card: run, epoch, samples, how to load it, the data's licence
//
// Parameter mapping (model/Albert.h -> modeling_albert.py, AlbertForMaskedLM):
//   token_embedding            -> albert.embeddings.word_embeddings, and predictions.decoder.weight
//                                 (tied there as here; both names are written)
//   position_embedding         -> albert.embeddings.position_embeddings
//   (none)                     -> albert.embeddings.token_type_embeddings: zeros [2, E], so that the
//                                 default token type 0 adds nothing
//   embedding_norm             -> albert.embeddings.LayerNorm
//   embedding_projection       -> albert.encoder.embedding_hidden_mapping_in
//   shared_qkv [3H, H]         -> attention.query, .key, .value: rows [0, H), [H, 2H), [2H, 3H)
//                                 (each split into heads as transformers' transpose_for_scores does)
//   shared_attention_out/_norm -> attention.dense / attention.LayerNorm
//   shared_ffn_in/_out/_norm   -> ffn / ffn_output / full_layer_layer_norm
//   head_transform / head_norm -> predictions.dense / predictions.LayerNorm
//   head_decoder_bias          -> predictions.bias, and predictions.decoder.bias (tied)
// where the layer's names sit under albert.encoder.albert_layer_groups.0.albert_layers.0.
// Our model has no attention mask, so the export equals AlbertForMaskedLM on unpadded input, or
// with attention_mask all ones. Versions of transformers whose AlbertMLMHead builds its LayerNorm
// without config.layer_norm_eps normalise the head with eps 1e-5 instead of 1e-12: logits differ in
// the sixth significant digit.
//
// Checkpoints come from Trainer::saveCheckpoint (train/Checkpoint.h): the parameters are the
// tensors named checkpointParameterName(<module name>), "param.<module name>"; LAMB's "optim.*"
// moments are not exported.
//
// Errors: dedloc::Error when the checkpoint does not fit the manifest's ModelShape (a missing,
// extra or differently shaped parameter) or belongs to another run, when the run's tokenizer is
// missing, differs from its manifest hash or from the model's vocabulary, and on I/O failure
// (naming the file). Nothing is written before the checks pass; each file is then replaced
// atomically, so a failure part-way (a full disk) can leave a mix of old and new files.
// Threads: a plain function, callable from any thread.
#include "run/RunManifest.h"
#include "train/Checkpoint.h"

#include <filesystem>
#include <vector>

namespace dedloc {

// Writes the files above into `outDir` (created if needed; other files there are left alone) and
// returns their paths in the order written, config.json after model.safetensors.
std::vector<std::filesystem::path> exportHuggingFace(const RunManifest &manifest, const Checkpoint &checkpoint,
                                                     const std::filesystem::path &outDir);

} // namespace dedloc
