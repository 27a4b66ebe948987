#include "system/TorchRuntime.h"

#if __has_include(<cuda_runtime_api.h>) && __has_include(<c10/cuda/CUDACachingAllocator.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "util/Log.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <link.h>
#include <thread>

namespace dedloc {

int configureTorchThreads(int threads)
{
    ::setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0); // before CUDA starts; a user's choice stays
    if (threads <= 0)
        threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
    torch::set_num_threads(threads);
    try {
        // One inter-op thread: our parallelism is inside ops; more only oversubscribes 2 cores.
        torch::set_num_interop_threads(1);
    } catch (const std::exception &) {
        // Already started by an earlier tensor op; harmless.
    }
    return torch::get_num_threads();
}

BlasInfo detectBlas()
{
    BlasInfo info;
    dl_iterate_phdr(
        [](dl_phdr_info *phdr, size_t, void *data) -> int {
            auto *out = static_cast<BlasInfo *>(data);
            const std::string name = phdr->dlpi_name ? phdr->dlpi_name : "";
            if (name.find("libblas") == std::string::npos && name.find("libopenblas") == std::string::npos
                && name.find("libmkl") == std::string::npos)
                return 0;
            std::error_code ec;
            const auto resolved = std::filesystem::canonical(name, ec);
            out->library = ec ? name : resolved.string();
            return out->library.find("libblas") != std::string::npos ? 1 : 0; // prefer libblas.so.3
        },
        &info);
    const auto &lib = info.library;
    if (lib.empty())
        info.kind = "unknown";
    else if (lib.find("openblas-openmp") != std::string::npos)
        info.kind = "openblas-openmp";
    else if (lib.find("openblas-pthread") != std::string::npos)
        info.kind = "openblas-pthread";
    else if (lib.find("openblas") != std::string::npos)
        info.kind = "openblas";
    else if (lib.find("mkl") != std::string::npos)
        info.kind = "mkl";
    else if (lib.find("/blas/") != std::string::npos || lib.find("libblas.so") != std::string::npos) {
        info.kind = "reference";
        info.isReference = true;
    } else
        info.kind = "unknown";
    return info;
}

bool cudaAvailable() { return torch::cuda::is_available(); }

int cudaDeviceCount() { return cudaAvailable() ? static_cast<int>(torch::cuda::device_count()) : 0; }

std::vector<std::string> trainingDevices(const std::vector<int> &gpus, bool allowCuda, int cudaDevices,
                                         std::vector<int> *skipped)
{
    std::vector<std::string> out;
    std::vector<int> seen;
    for (int index : gpus) {
        if (std::find(seen.begin(), seen.end(), index) != seen.end())
            continue;
        seen.push_back(index);
        if (allowCuda && index >= 0 && index < cudaDevices)
            out.push_back("cuda:" + std::to_string(index));
        else if (skipped)
            skipped->push_back(index);
    }
    return out;
}

void logRuntime(bool allowCuda)
{
    log::info("system", "torch threads: " + std::to_string(torch::get_num_threads()));
    const auto blas = detectBlas();
    if (blas.isReference)
        log::warning("system", "BLAS is the slow reference implementation (" + blas.library
                                   + "): training runs 8-27x slower. Fix: installers/install-deps.sh "
                                     "(installs libopenblas0-openmp and selects it)");
    else
        log::info("system", "BLAS: " + blas.kind + (blas.library.empty() ? "" : " (" + blas.library + ")"));
    if (allowCuda && cudaAvailable())
        log::info("system", "training on CUDA (" + std::to_string(torch::cuda::device_count())
                                + " device(s)), bf16 mixed precision");
    else
        log::info("system", std::string("training on CPU") + (allowCuda ? " (no CUDA device or CUDA-less libtorch)" : " (--cpu)"));
}

void releaseAcceleratorMemory()
{
#if __has_include(<cuda_runtime_api.h>) && __has_include(<c10/cuda/CUDACachingAllocator.h>)
    if (cudaAvailable())
        c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

void setAcceleratorMemoryFraction(double fraction, const std::vector<int> &cudaDevices)
{
#if __has_include(<cuda_runtime_api.h>) && __has_include(<c10/cuda/CUDACachingAllocator.h>)
    if (cudaAvailable() && fraction > 0.0 && fraction <= 1.0)
        for (int device : cudaDevices)
            if (device >= 0 && device < cudaDeviceCount())
                c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, static_cast<c10::DeviceIndex>(device));
#else
    (void)fraction;
    (void)cudaDevices;
#endif
}

} // namespace dedloc
