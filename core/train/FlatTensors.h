#pragma once
// Tensors <-> one flat fp32 vector in their order (the layout of Trainer::parametersFlat(), the
// swarm's averaged vectors and the shareable state). Torch units of core/train only.
// Errors: dedloc::Error when a flat vector's size is not the tensors' element count.
#include "util/Error.h"

#ifndef Q_MOC_RUN // moc needs no libtorch declaration (parsing it cost ~9 s a test's moc)
#include <torch/torch.h>
#endif

#include <span>
#include <string>
#include <vector>

namespace dedloc {

// The tensors' elements in turn, as fp32 on the CPU.
inline std::vector<float> flatten(const std::vector<torch::Tensor> &tensors)
{
    std::vector<torch::Tensor> flat;
    for (const auto &t : tensors)
        flat.push_back(t.detach().to(torch::kCPU, torch::kFloat).reshape({-1}));
    auto all = torch::cat(flat);
    return {all.data_ptr<float>(), all.data_ptr<float>() + all.numel()};
}

// Copies `flat` into `tensors` (any device); `what` names the vector in the error. Nothing is
// written when the size differs.
inline void copyFlatInto(std::span<const float> flat, const std::vector<torch::Tensor> &tensors, const char *what)
{
    long long elements = 0;
    for (const auto &t : tensors)
        elements += t.numel();
    if (static_cast<long long>(flat.size()) != elements)
        throw Error(std::string(what) + " has " + std::to_string(flat.size()) + " elements, the model "
                    + std::to_string(elements));
    torch::NoGradGuard noGrad;
    std::size_t offset = 0;
    for (const auto &t : tensors) {
        auto target = t; // a handle on the same storage
        target.copy_(torch::from_blob(const_cast<float *>(flat.data() + offset), t.sizes(), torch::kFloat));
        offset += static_cast<std::size_t>(t.numel());
    }
}

} // namespace dedloc
