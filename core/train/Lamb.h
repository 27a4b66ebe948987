#pragma once
// LAMB optimizer (You et al., "Large Batch Optimization for Deep Learning: Training BERT in 76
// minutes", ICLR 2020, arXiv 1904.00962, Algorithm 2), the optimizer of the sahajBERT run.
// For each parameter tensor w with gradient g at step t (t counts from 1):
//   m <- b1 m + (1 - b1) g                 v <- b2 v + (1 - b2) g^2
//   m^ = m / (1 - b1^t), v^ = v / (1 - b2^t)   (when debias; else m^ = m, v^ = v)
//   r  = m^ / (sqrt(v^) + eps) + lambda w      (lambda = weight decay, 0 for excluded tensors)
//   trust = phi(||w||) / ||r||, phi(x) = min(x, clamp); trust = 1 if either norm is 0
//   w <- w - lr * trust * r
// Norms are L2 over the whole tensor (layer-wise adaptation). State is kept in fp32 on the
// parameter's device. Not thread-safe: call from the trainer thread only.
#include "run/RunManifest.h"

#ifndef Q_MOC_RUN // moc needs no libtorch declaration (parsing it cost ~9 s a test's moc)
#include <torch/torch.h>
#endif

#include <string>
#include <vector>

namespace dedloc {

struct NamedTensor {
    std::string name;
    torch::Tensor tensor;
};

class Lamb final {
public:
    // `decay[i]` says whether parameter i gets weight decay (biases and LayerNorm do not).
    Lamb(std::vector<torch::Tensor> parameters, std::vector<bool> decay, const OptimizerSpec &options);

    // Applies one step with learning rate `lr` using each parameter's .grad() (undefined grads
    // are skipped). Increments stepCount().
    void step(double lr);

    [[nodiscard]] long stepCount() const { return m_step; }
    // Optimizer statistics as "exp_avg.<i>" / "exp_avg_sq.<i>" tensors, for checkpoints and
    // state sharing. loadState() checks names and shapes and throws dedloc::Error on mismatch.
    [[nodiscard]] std::vector<NamedTensor> state() const;
    void loadState(const std::vector<NamedTensor> &state, long stepCount);
    // Moves the statistics to `device` (call after the parameters moved there).
    void moveTo(const torch::Device &device);

private:
    std::vector<torch::Tensor> m_parameters;
    std::vector<bool> m_decay;
    std::vector<torch::Tensor> m_expAvg;
    std::vector<torch::Tensor> m_expAvgSq;
    OptimizerSpec m_options;
    long m_step = 0;
};

} // namespace dedloc
