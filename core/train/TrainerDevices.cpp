// Where the trainer computes: moving its state between devices and splitting micro-batches
// among several (Trainer::setDevices, train/Trainer.h).
#include "train/TrainerImpl.h"

#include <c10/core/DeviceGuard.h>

#include <future>

namespace dedloc {

namespace {

torch::Device parseDevice(const std::string &name)
{
    try {
        torch::Device device(name);
        if (device.is_cuda()) {
            const auto count = static_cast<int>(torch::cuda::device_count());
            if (!device.has_index())
                device = torch::Device(torch::kCUDA, 0);
            if (device.index() >= count)
                throw Error("device " + name + " does not exist: this process sees " + std::to_string(count)
                            + " CUDA device(s)");
        } else if (!device.is_cpu())
            throw Error("device " + name + ": only cpu and cuda devices are supported");
        return device;
    } catch (const c10::Error &) {
        throw Error("\"" + name + "\" is not a device name (cpu, cuda:0, cuda:1, ...)");
    }
}

} // namespace

void Trainer::Impl::moveTo(const torch::Device &target)
{
    if (target == device)
        return;
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> grads;
    for (auto &p : model->parameters()) {
        grads.push_back(p.grad());
        p.mutable_grad() = torch::Tensor();
    }
    model->to(target); // in place: the optimizers' handles see the moved parameters
    std::size_t i = 0;
    for (auto &p : model->parameters()) {
        if (grads[i].defined())
            p.mutable_grad() = grads[i].to(target);
        ++i;
    }
    optimizer->moveTo(target);
    if (outer)
        outer->moveTo(target);
    for (auto &t : detachedParameters)
        t = t.to(target);
    log::info("train", "moved the model from " + device.str() + " to " + target.str());
    device = target;
}

void Trainer::Impl::setReplicas(const std::vector<torch::Device> &devices)
{
    if (devices == replicaDevices)
        return;
    replicas.clear();
    replicaDevices.clear();
    for (const auto &dev : devices) {
        AlbertMlm replica(manifest.model);
        replica->to(dev);
        replicas.push_back(std::move(replica));
        replicaDevices.push_back(dev);
    }
}

double Trainer::Impl::backwardLossSum(const torch::Tensor &ids, const torch::Tensor &labels, int &devicesUsed)
{
    devicesUsed = 1;
    if (replicas.empty()) {
        auto lossSum = loss(ids, labels, true).sum();
        lossSum.backward();
        return lossSum.item<double>();
    }
    const auto parameters = model->parameters();
    {
        torch::NoGradGuard noGrad;
        for (auto &replica : replicas) {
            auto copies = replica->parameters();
            for (std::size_t i = 0; i < copies.size(); ++i)
                copies[i].copy_(parameters[i]);
        }
    }
    const auto parts = static_cast<std::int64_t>(replicas.size() + 1);
    const auto idChunks = ids.tensor_split(parts, 0);
    const auto labelChunks = labels.tensor_split(parts, 0);
    std::vector<std::future<double>> shares; // joined by their destructors if this throws
    for (std::size_t r = 0; r < replicas.size(); ++r) {
        if (idChunks[r + 1].size(0) == 0) // fewer samples than devices: the first ones compute
            continue;
        shares.push_back(std::async(std::launch::async, [&, r] {
            const auto &dev = replicaDevices[r];
            c10::DeviceGuard guard(dev);
            auto part = lossOf(replicas[r], idChunks[r + 1].to(dev), labelChunks[r + 1].to(dev), true).sum();
            part.backward();
            return part.item<double>();
        }));
    }
    auto own = lossOf(model, idChunks[0], labelChunks[0], true).sum();
    own.backward();
    double total = own.item<double>();
    for (auto &share : shares)
        total += share.get();
    devicesUsed += static_cast<int>(shares.size());
    torch::NoGradGuard noGrad;
    for (auto &replica : replicas) {
        auto copies = replica->parameters();
        for (std::size_t i = 0; i < copies.size(); ++i) {
            auto &g = copies[i].mutable_grad();
            if (!g.defined())
                continue;
            if (parameters[i].grad().defined())
                parameters[i].mutable_grad().add_(g.to(device));
            else
                parameters[i].mutable_grad() = g.to(device);
            g = torch::Tensor();
        }
    }
    return total;
}

void Trainer::setDevices(const std::vector<std::string> &names)
{
    std::vector<torch::Device> wanted;
    for (const auto &name : names) {
        wanted.push_back(parseDevice(name));
        // The CPU may be named more than once (one thread per share: how tests check the split).
        if (wanted.back().is_cuda() && std::find(wanted.begin(), wanted.end() - 1, wanted.back()) != wanted.end() - 1)
            throw Error("device " + wanted.back().str() + " is named twice");
    }
    if (wanted.empty())
        wanted.emplace_back(torch::kCPU);
    d->moveTo(wanted.front());
    d->setReplicas({wanted.begin() + 1, wanted.end()});
}

std::vector<std::string> Trainer::devices() const
{
    std::vector<std::string> out{d->device.str()};
    for (const auto &dev : d->replicaDevices)
        out.push_back(dev.str());
    return out;
}

} // namespace dedloc
