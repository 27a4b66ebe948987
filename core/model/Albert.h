#pragma once
// ALBERT masked-language model (Lan et al. 2020, arXiv 1909.11942) in libtorch:
//  - factorised embedding: token (V x E) + position (P x E) -> LayerNorm(E) -> Linear(E -> H)
//    (section 3.1 "factorized embedding parameterization", E = 128);
//  - ONE post-LayerNorm transformer encoder layer (multi-head self-attention + GELU feed-forward)
//    applied L times ("cross-layer parameter sharing", section 3.1);
//  - masked-LM head: Linear(H -> E), GELU, LayerNorm(E), then the token embedding matrix
//    transposed (tied) plus a bias -> V logits.
// Dropout is 0 (ALBERT v2 removed it), so a forward pass is a pure function of the parameters.
// The head runs only at positions that carry a label, which saves most of the V-wide matmul.
// Include only from core/ translation units that already pay for <torch/torch.h>.
#include "model/ModelShape.h"

#ifndef Q_MOC_RUN // moc needs no libtorch declaration (parsing it cost ~9 s a test's moc)
#include <torch/torch.h>
#endif

namespace dedloc {

class AlbertMlmImpl final : public torch::nn::Module {
public:
    explicit AlbertMlmImpl(const ModelShape &shape);

    // inputIds: [B, T] int64 on the module's device. Returns hidden states [B, T, H].
    // attentionMask (optional): [B, T], 1 (or true) at real tokens and 0 at padding. Attention
    // then gives padded keys the score float's lowest value before the softmax (as Hugging Face's
    // ALBERT adds (1 - mask) * min), so real tokens' states do not depend on the padding; padded
    // positions' own states are meaningless. Without a mask every position attends to every one.
    torch::Tensor encode(const torch::Tensor &inputIds, const torch::Tensor &attentionMask = {});
    // Mean cross-entropy over positions whose label != -100 (nats per masked token).
    // labels: [B, T] int64. Returns a scalar.
    torch::Tensor mlmLoss(const torch::Tensor &inputIds, const torch::Tensor &labels);
    // Per sequence, the mean cross-entropy over its positions whose label != -100: [B] (nats per
    // masked token; a row without such a position gives 0). Training sums these over the
    // samples and divides by the sample count at the step, so a batch's gradient does not
    // depend on how it is cut into micro-batches or shared among peers (a token mean per
    // micro-batch would weight tokens by their micro-batch's masked count).
    torch::Tensor mlmSampleLosses(const torch::Tensor &inputIds, const torch::Tensor &labels);
    // Masked-LM logits at every position: the head applied to encode(inputIds, attentionMask).
    // inputIds [B, T] int64 -> [B, T, V] (unnormalised log-probabilities over the vocabulary).
    // The same numbers as Hugging Face's AlbertForMaskedLM `logits` on the exported model
    // (eval/HuggingFaceExport.h).
    torch::Tensor mlmLogits(const torch::Tensor &inputIds, const torch::Tensor &attentionMask = {});

    [[nodiscard]] const ModelShape &shape() const { return m_shape; }
    [[nodiscard]] std::int64_t parameterCount() const;

private:
    // keyBias: [B, 1, 1, T] added to the attention scores, or undefined for none.
    torch::Tensor encoderLayer(const torch::Tensor &x, const torch::Tensor &keyBias);
    // Cross-entropy at each position whose label != -100: [M]; *positions gets their flat
    // indices into [B * T].
    torch::Tensor maskedTokenLosses(const torch::Tensor &inputIds, const torch::Tensor &labels, torch::Tensor *positions);
    // The masked-LM head: hidden states [..., H] -> logits [..., V].
    torch::Tensor headLogits(const torch::Tensor &hidden);

    ModelShape m_shape;
    torch::nn::Embedding m_tokenEmbedding{nullptr};
    torch::nn::Embedding m_positionEmbedding{nullptr};
    torch::nn::LayerNorm m_embeddingNorm{nullptr};
    torch::nn::Linear m_embeddingProjection{nullptr};
    // The shared encoder layer.
    torch::nn::Linear m_qkv{nullptr};
    torch::nn::Linear m_attentionOut{nullptr};
    torch::nn::LayerNorm m_attentionNorm{nullptr};
    torch::nn::Linear m_ffnIn{nullptr};
    torch::nn::Linear m_ffnOut{nullptr};
    torch::nn::LayerNorm m_ffnNorm{nullptr};
    // MLM head (decoder weight is tied to m_tokenEmbedding).
    torch::nn::Linear m_headTransform{nullptr};
    torch::nn::LayerNorm m_headNorm{nullptr};
    torch::Tensor m_decoderBias;
};
TORCH_MODULE(AlbertMlm);

} // namespace dedloc
