#include "train/OuterOptimizer.h"

#include "util/Error.h"

namespace dedloc {

namespace {

std::vector<float> flattenTensors(const std::vector<torch::Tensor> &tensors)
{
    std::vector<float> out;
    for (const auto &t : tensors) {
        auto cpu = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
        out.insert(out.end(), cpu.data_ptr<float>(), cpu.data_ptr<float>() + cpu.numel());
    }
    return out;
}

// Copies `flat` (registration order) into `tensors`, after checking its size.
void unflattenInto(std::span<const float> flat, std::vector<torch::Tensor> &tensors, long long elements,
                   const char *what)
{
    if (static_cast<long long>(flat.size()) != elements)
        throw Error(std::string(what) + " has " + std::to_string(flat.size()) + " elements, the model "
                    + std::to_string(elements));
    torch::NoGradGuard noGrad;
    std::size_t offset = 0;
    for (auto &t : tensors) {
        auto src = torch::from_blob(const_cast<float *>(flat.data() + offset), t.sizes(), torch::kFloat);
        t.copy_(src);
        offset += static_cast<std::size_t>(t.numel());
    }
}

} // namespace

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
    return flattenTensors(delta);
}

void OuterOptimizer::step(std::span<const float> averagedPseudoGradient)
{
    std::vector<torch::Tensor> delta;
    for (const auto &a : m_anchor)
        delta.push_back(torch::empty_like(a));
    unflattenInto(averagedPseudoGradient, delta, m_elements, "averaged pseudo-gradient");
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
    unflattenInto(momentumFlat, m_momentum, m_elements, "outer momentum");
}

std::vector<float> OuterOptimizer::anchorFlat() const { return flattenTensors(m_anchor); }

std::vector<float> OuterOptimizer::momentumFlat() const { return flattenTensors(m_momentum); }

} // namespace dedloc
