#include "train/Lamb.h"

#include "util/Error.h"

#include <cmath>

namespace dedloc {

Lamb::Lamb(std::vector<torch::Tensor> parameters, std::vector<bool> decay, const OptimizerSpec &options)
    : m_parameters(std::move(parameters)), m_decay(std::move(decay)), m_options(options)
{
    if (m_decay.size() != m_parameters.size())
        throw Error("LAMB: one weight-decay flag per parameter is required");
    for (const auto &p : m_parameters) {
        m_expAvg.push_back(torch::zeros_like(p, torch::kFloat));
        m_expAvgSq.push_back(torch::zeros_like(p, torch::kFloat));
    }
}

void Lamb::step(double lr)
{
    torch::NoGradGuard noGrad;
    ++m_step;
    const double b1 = m_options.beta1, b2 = m_options.beta2;
    const double c1 = m_options.debias ? 1.0 - std::pow(b1, static_cast<double>(m_step)) : 1.0;
    const double c2 = m_options.debias ? 1.0 - std::pow(b2, static_cast<double>(m_step)) : 1.0;
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        auto &w = m_parameters[i];
        const auto &g = w.grad();
        if (!g.defined())
            continue;
        auto &m = m_expAvg[i];
        auto &v = m_expAvgSq[i];
        m.mul_(b1).add_(g, 1.0 - b1);
        v.mul_(b2).addcmul_(g, g, 1.0 - b2);
        auto denom = (v / c2).sqrt_().add_(m_options.epsilon);
        auto r = (m / c1).div_(denom);
        if (m_decay[i] && m_options.weightDecay != 0.0)
            r.add_(w, m_options.weightDecay);
        // The trust ratio stays a device tensor: reading the norms back would wait for the GPU
        // twice per parameter tensor, and the CPU could not queue the next kernels meanwhile.
        const auto wNorm = w.norm().clamp_max(m_options.clampValue);
        const auto rNorm = r.norm();
        const auto trust = torch::where(wNorm.gt(0.0).logical_and(rNorm.gt(0.0)), wNorm / rNorm,
                                        torch::ones_like(wNorm));
        w.sub_(r.mul_(trust * lr));
    }
}

std::vector<NamedTensor> Lamb::state() const
{
    std::vector<NamedTensor> out;
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        out.push_back({"exp_avg." + std::to_string(i), m_expAvg[i]});
        out.push_back({"exp_avg_sq." + std::to_string(i), m_expAvgSq[i]});
    }
    return out;
}

void Lamb::loadState(const std::vector<NamedTensor> &state, long stepCount)
{
    if (state.size() != 2 * m_parameters.size())
        throw Error("optimizer state has " + std::to_string(state.size()) + " tensors, expected "
                    + std::to_string(2 * m_parameters.size()));
    torch::NoGradGuard noGrad;
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        const auto &a = state[2 * i];
        const auto &b = state[2 * i + 1];
        if (a.name != "exp_avg." + std::to_string(i) || b.name != "exp_avg_sq." + std::to_string(i))
            throw Error("optimizer state tensor " + a.name + " is out of order");
        if (a.tensor.sizes() != m_expAvg[i].sizes() || b.tensor.sizes() != m_expAvgSq[i].sizes())
            throw Error("optimizer state tensor " + a.name + " has the wrong shape");
        m_expAvg[i].copy_(a.tensor);
        m_expAvgSq[i].copy_(b.tensor);
    }
    m_step = stepCount;
}

void Lamb::moveTo(const torch::Device &device)
{
    for (auto *state : {&m_expAvg, &m_expAvgSq})
        for (auto &t : *state)
            t = t.to(device);
}

} // namespace dedloc
