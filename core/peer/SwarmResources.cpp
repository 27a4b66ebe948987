// SwarmPeer's resource caps (face/PeerControl.h ResourceCaps), applied by the worker between
// micro-batches: threads, micro-batch size, compute share, bandwidth, accelerator memory and
// the devices the trainer computes on.
#include "peer/SwarmPeerImpl.h"

#include "system/TorchRuntime.h"
#include "util/Error.h"
#include "util/Log.h"

#include <cmath>
#include <cstdlib>

namespace dedloc {

namespace {

// The indices of the CUDA devices among torch device names ("cuda:1" -> 1).
std::vector<int> cudaIndices(const std::vector<std::string> &devices)
{
    std::vector<int> out;
    for (const auto &name : devices)
        if (name.rfind("cuda:", 0) == 0)
            out.push_back(std::atoi(name.c_str() + 5));
    return out;
}

} // namespace

void SwarmPeer::Impl::applyCaps()
{
    ResourceCaps c;
    {
        std::lock_guard lock(mutex);
        if (!capsChanged)
            return;
        c = caps;
        capsChanged = false;
    }
    if (c.cpuThreads > 0)
        configureTorchThreads(c.cpuThreads);
    if (c.microBatchSize > 0)
        trainer->setMicroBatchSize(c.microBatchSize);
    computeShare = c.computeShare;
    upload.setRate(std::max(0.0, c.uploadBytesPerSecond));
    download.setRate(std::max(0.0, c.downloadBytesPerSecond));
    applyDevices(c.gpus);
    if (c.gpuMemoryFraction > 0.0)
        setAcceleratorMemoryFraction(std::min(1.0, c.gpuMemoryFraction), cudaIndices(trainer->devices()));
}

void SwarmPeer::Impl::applyDevices(const std::vector<int> &gpus)
{
    const int cudaDevices = cudaDeviceCount();
    const bool allowCuda = opt.allowCuda && opt.role == PeerRole::Trainer;
    std::vector<int> skipped;
    auto names = trainingDevices(gpus, allowCuda, cudaDevices, &skipped);
    if (!skipped.empty() && allowCuda && cudaDevices > 0) {
        std::string list;
        for (int index : skipped) {
            if (!list.empty())
                list += ", ";
            list += std::to_string(index);
        }
        log::warning("peer", "GPU " + list + " chosen but CUDA sees " + std::to_string(cudaDevices)
                                 + " device(s): skipped");
    }
    if (names.empty())
        names = {"cpu"};
    if (names == trainer->devices())
        return;
    try {
        trainer->setDevices(names);
        log::info("peer", "training on " + trainer->deviceName());
    } catch (const Error &e) {
        log::error("peer", std::string("cannot change the training devices: ") + e.what());
    }
}

void SwarmPeer::Impl::addMemoryFields(nlohmann::json &fields)
{
    constexpr double MiB = 1024.0 * 1024.0;
    const auto m = memoryUsage();
    if (m.residentBytes >= 0)
        fields["rss_mib"] = std::round(static_cast<double>(m.residentBytes) / MiB * 10.0) / 10.0;
    if (m.heapInUseBytes >= 0)
        fields["heap_mib"] = std::round(static_cast<double>(m.heapInUseBytes) / MiB * 10.0) / 10.0;
}

} // namespace dedloc
