#include "model/Albert.h"

#include "util/Error.h"

#include <cmath>
#include <limits>

namespace dedloc {

namespace nn = torch::nn;

AlbertMlmImpl::AlbertMlmImpl(const ModelShape &shape) : m_shape(shape)
{
    const int V = shape.vocabSize, E = shape.embeddingSize, H = shape.hiddenSize;
    if (H % shape.numHeads != 0)
        throw Error("hidden size " + std::to_string(H) + " is not divisible by " + std::to_string(shape.numHeads)
                    + " attention heads");
    m_tokenEmbedding = register_module("token_embedding", nn::Embedding(V, E));
    m_positionEmbedding = register_module("position_embedding", nn::Embedding(shape.maxPositions, E));
    m_embeddingNorm = register_module("embedding_norm", nn::LayerNorm(nn::LayerNormOptions({E}).eps(1e-12)));
    m_embeddingProjection = register_module("embedding_projection", nn::Linear(E, H));
    m_qkv = register_module("shared_qkv", nn::Linear(H, 3 * H));
    m_attentionOut = register_module("shared_attention_out", nn::Linear(H, H));
    m_attentionNorm = register_module("shared_attention_norm", nn::LayerNorm(nn::LayerNormOptions({H}).eps(1e-12)));
    m_ffnIn = register_module("shared_ffn_in", nn::Linear(H, shape.intermediateSize));
    m_ffnOut = register_module("shared_ffn_out", nn::Linear(shape.intermediateSize, H));
    m_ffnNorm = register_module("shared_ffn_norm", nn::LayerNorm(nn::LayerNormOptions({H}).eps(1e-12)));
    m_headTransform = register_module("head_transform", nn::Linear(H, E));
    m_headNorm = register_module("head_norm", nn::LayerNorm(nn::LayerNormOptions({E}).eps(1e-12)));
    m_decoderBias = register_parameter("head_decoder_bias", torch::zeros({V}));

    // BERT/ALBERT initialisation: N(0, 0.02) weights, zero biases, unit LayerNorm gains.
    torch::NoGradGuard noGrad;
    for (auto &p : named_parameters()) {
        const auto &name = p.key();
        if (name.find("norm") != std::string::npos)
            continue; // LayerNorm defaults are already (1, 0)
        if (name.ends_with("bias"))
            p.value().zero_();
        else
            p.value().normal_(0.0, 0.02);
    }
}

std::int64_t AlbertMlmImpl::parameterCount() const
{
    std::int64_t n = 0;
    for (const auto &p : parameters())
        n += p.numel();
    return n;
}

torch::Tensor AlbertMlmImpl::encoderLayer(const torch::Tensor &x, const torch::Tensor &keyBias)
{
    const auto B = x.size(0), T = x.size(1);
    const std::int64_t heads = m_shape.numHeads, d = m_shape.hiddenSize / m_shape.numHeads;
    // [B, T, 3H] -> [3, B, heads, T, d]
    auto qkv = m_qkv->forward(x).view({B, T, 3, heads, d}).permute({2, 0, 3, 1, 4});
    auto q = qkv[0], k = qkv[1], v = qkv[2];
    auto scores = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(d)));
    if (keyBias.defined())
        scores = scores + keyBias;
    auto context = torch::matmul(torch::softmax(scores, -1), v); // [B, heads, T, d]
    context = context.permute({0, 2, 1, 3}).reshape({B, T, heads * d});
    auto h = m_attentionNorm->forward(x + m_attentionOut->forward(context));
    auto f = m_ffnOut->forward(torch::gelu(m_ffnIn->forward(h)));
    return m_ffnNorm->forward(h + f);
}

torch::Tensor AlbertMlmImpl::encode(const torch::Tensor &inputIds, const torch::Tensor &attentionMask)
{
    const auto T = inputIds.size(1);
    if (T > m_shape.maxPositions)
        throw Error("sequence of " + std::to_string(T) + " tokens exceeds the model's " +
                    std::to_string(m_shape.maxPositions) + " positions");
    torch::Tensor keyBias; // [B, 1, 1, T]: 0 at real keys, float's lowest at padded ones
    if (attentionMask.defined()) {
        if (attentionMask.sizes() != inputIds.sizes())
            throw Error("attention mask of shape " + c10::str(attentionMask.sizes()) + " does not match the input's "
                        + c10::str(inputIds.sizes()));
        const auto padded = attentionMask.eq(0).to(torch::kFloat);
        keyBias = (padded * std::numeric_limits<float>::lowest()).view({inputIds.size(0), 1, 1, T});
    }
    auto positions = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(inputIds.device()));
    auto e = m_tokenEmbedding->forward(inputIds) + m_positionEmbedding->forward(positions).unsqueeze(0);
    auto x = m_embeddingProjection->forward(m_embeddingNorm->forward(e));
    for (int layer = 0; layer < m_shape.numLayers; ++layer)
        x = encoderLayer(x, keyBias);
    return x;
}

torch::Tensor AlbertMlmImpl::maskedTokenLosses(const torch::Tensor &inputIds, const torch::Tensor &labels,
                                               torch::Tensor *positions)
{
    auto hidden = encode(inputIds);                            // [B, T, H]
    auto flatLabels = labels.reshape({-1});
    *positions = flatLabels.ne(-100).nonzero().squeeze(1);     // [M], in [0, B*T)
    auto selected = hidden.reshape({-1, m_shape.hiddenSize}).index_select(0, *positions);
    auto logits = headLogits(selected); // [M, V]
    return torch::nn::functional::cross_entropy(
        logits.to(torch::kFloat), flatLabels.index_select(0, *positions),
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone)); // [M]
}

torch::Tensor AlbertMlmImpl::headLogits(const torch::Tensor &hidden)
{
    auto h = m_headNorm->forward(torch::gelu(m_headTransform->forward(hidden)));
    return torch::matmul(h, m_tokenEmbedding->weight.t()) + m_decoderBias;
}

torch::Tensor AlbertMlmImpl::mlmLogits(const torch::Tensor &inputIds, const torch::Tensor &attentionMask)
{
    return headLogits(encode(inputIds, attentionMask)); // [B, T, V]
}

torch::Tensor AlbertMlmImpl::mlmLoss(const torch::Tensor &inputIds, const torch::Tensor &labels)
{
    torch::Tensor positions;
    return maskedTokenLosses(inputIds, labels, &positions).mean();
}

torch::Tensor AlbertMlmImpl::mlmSampleLosses(const torch::Tensor &inputIds, const torch::Tensor &labels)
{
    const auto rows = inputIds.size(0), columns = inputIds.size(1);
    torch::Tensor positions;
    auto perToken = maskedTokenLosses(inputIds, labels, &positions);
    auto row = torch::div(positions, columns, "floor");       // the sequence of each position
    auto sums = torch::zeros({rows}, perToken.options()).index_add(0, row, perToken);
    auto counts = torch::zeros({rows}, perToken.options()).index_add(0, row, torch::ones_like(perToken));
    return sums / counts.clamp_min(1.0);
}

} // namespace dedloc
