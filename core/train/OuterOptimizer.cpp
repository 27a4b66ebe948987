#include "train/OuterOptimizer.h"

#include "train/FlatTensors.h"
#include "util/Error.h"

namespace dedloc {

OuterOptimizer::OuterOptimizer(std::vector<torch::Tensor> parameters, double learningRate, double momentum)
    : m_parameters(std::move(parameters)), m_learningRate(learningRate), m_momentumFactor(momentum)
{
    torch::NoGradGuard noGrad;
    for (const auto &p : m_parameters) {
        m_anchor.push_back(p.detach().to(torch::kFloat).clone());
        m_momentum.push_back(torch::zeros_like(m_anchor.back()));
        m_elements += p.numel();
    }
}

std::vector<float> OuterOptimizer::pseudoGradient() const
{
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> delta;
    for (std::size_t i = 0; i < m_parameters.size(); ++i)
        delta.push_back(m_anchor[i] - m_parameters[i].detach().to(torch::kFloat));
    return flatten(delta);
}

void OuterOptimizer::step(std::span<const float> averagedPseudoGradient)
{
    std::vector<torch::Tensor> delta;
    for (const auto &a : m_anchor)
        delta.push_back(torch::empty_like(a));
    copyFlatInto(averagedPseudoGradient, delta, "averaged pseudo-gradient");
    torch::NoGradGuard noGrad;
    for (std::size_t i = 0; i < m_anchor.size(); ++i) {
        m_momentum[i].mul_(m_momentumFactor).add_(delta[i]);
        m_anchor[i].sub_(delta[i].add_(m_momentum[i], m_momentumFactor), m_learningRate);
    }
    resetToAnchor();
}

void OuterOptimizer::resetToAnchor()
{
    torch::NoGradGuard noGrad;
    for (std::size_t i = 0; i < m_parameters.size(); ++i)
        m_parameters[i].copy_(m_anchor[i]);
}

void OuterOptimizer::rebase(std::span<const float> momentumFlat)
{
    if (!momentumFlat.empty() && static_cast<long long>(momentumFlat.size()) != m_elements)
        throw Error("outer momentum has " + std::to_string(momentumFlat.size()) + " elements, the model "
                    + std::to_string(m_elements));
    torch::NoGradGuard noGrad;
    for (std::size_t i = 0; i < m_parameters.size(); ++i)
        m_anchor[i].copy_(m_parameters[i].detach());
    if (momentumFlat.empty()) {
        for (auto &m : m_momentum)
            m.zero_();
        return;
    }
    copyFlatInto(momentumFlat, m_momentum, "outer momentum");
}

std::vector<float> OuterOptimizer::anchorFlat() const { return flatten(m_anchor); }

std::vector<float> OuterOptimizer::momentumFlat() const { return flatten(m_momentum); }

void OuterOptimizer::moveTo(const torch::Device &device)
{
    for (auto *state : {&m_anchor, &m_momentum})
        for (auto &t : *state)
            t = t.to(device);
}

} // namespace dedloc
