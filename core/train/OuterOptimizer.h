#pragma once
// The outer optimizer of local-update mode (DiLoCo, Douillard et al. 2023, arXiv 2311.08105,
// Algorithm 1; docs/PROTOCOL.md "Averaging modes"). It keeps theta, the parameters at the last
// outer step (the anchor every peer of the swarm shares), and Nesterov's momentum buffer v.
// Between outer steps the trainer's inner optimizer moves the local parameters w; at the outer
// step the swarm averages the pseudo-gradients delta = theta - w (weighted by samples) and
// every peer applies the same update to the same theta (PyTorch's SGD with nesterov=True,
// dampening 0, as DiLoCo uses it):
//     v     <- mu v + delta_avg
//     theta <- theta - lr (delta_avg + mu v)
//     w     <- theta
// so that, from the same theta and v, every member lands bitwise on the same parameters.
// Tensors are fp32 on the parameters' device; flat vectors are fp32 on the CPU, in parameter
// registration order (Trainer::parametersFlat() layout). Not thread-safe: the trainer thread.
// Errors: dedloc::Error for a vector of the wrong size.
#ifndef Q_MOC_RUN // moc needs no libtorch declaration (parsing it cost ~9 s a test's moc)
#include <torch/torch.h>
#endif

#include <span>
#include <vector>

namespace dedloc {

class OuterOptimizer final {
public:
    // `parameters`: the model's tensors (shared with it, not copied); the anchor starts as a copy
    // of their values and the momentum at zero.
    OuterOptimizer(std::vector<torch::Tensor> parameters, double learningRate, double momentum);

    // theta - w, flattened: what this peer averages at the outer step.
    [[nodiscard]] std::vector<float> pseudoGradient() const;
    // The update above with the averaged pseudo-gradient; the parameters become the new anchor.
    void step(std::span<const float> averagedPseudoGradient);
    // Sets the parameters back to the anchor (a skipped outer step drops the local progress).
    void resetToAnchor();
    // After the parameters were loaded from elsewhere (a checkpoint, a downloaded state): they
    // become the anchor, and the momentum is set from `momentumFlat` (zero when empty).
    void rebase(std::span<const float> momentumFlat);

    [[nodiscard]] std::vector<float> anchorFlat() const;
    [[nodiscard]] std::vector<float> momentumFlat() const;
    [[nodiscard]] const std::vector<torch::Tensor> &anchor() const { return m_anchor; }
    [[nodiscard]] const std::vector<torch::Tensor> &momentum() const { return m_momentum; }
    [[nodiscard]] long long elements() const { return m_elements; }
    // Moves the anchor and the momentum to `device` (call after the parameters moved there).
    void moveTo(const torch::Device &device);

private:
    std::vector<torch::Tensor> m_parameters;
    std::vector<torch::Tensor> m_anchor;
    std::vector<torch::Tensor> m_momentum;
    double m_learningRate;
    double m_momentumFactor;
    long long m_elements = 0;
};

} // namespace dedloc
