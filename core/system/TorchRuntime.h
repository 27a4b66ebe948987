#pragma once
// Process-wide libtorch settings and facts: thread count, which BLAS library is loaded, and
// whether CUDA is usable. Torch-free header. Call configureTorchThreads() once, at start-up,
// before any tensor work (torch's inter-op pool can only be sized before it starts).
#include <string>
#include <vector>

namespace dedloc {

struct BlasInfo {
    std::string library;   // resolved path of the loaded libblas/libopenblas, or "" if none found
    std::string kind;      // "openblas-openmp", "openblas-pthread", "openblas", "reference", "mkl", "unknown"
    bool isReference = false; // netlib's reference BLAS: 8-27x slower here (docs/BENCHMARKS.md)
};

// threads <= 0: one per online CPU core. Returns the count in effect. Also asks CUDA to number
// GPUs in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID, unless the environment already sets it),
// the order NVML and the window list them in, so "GPU 1" is the same board everywhere.
int configureTorchThreads(int threads);
[[nodiscard]] BlasInfo detectBlas();
[[nodiscard]] bool cudaAvailable();
[[nodiscard]] int cudaDeviceCount(); // 0 without CUDA

// The trainer's devices (Trainer::setDevices) for the chosen GPU indices (ResourceCaps::gpus):
// "cuda:<i>" for each index CUDA sees, in the order given, without repeats. An index it does not
// see (or any, when !allowCuda or this libtorch has no CUDA) goes to `skipped`. Empty: the CPU.
[[nodiscard]] std::vector<std::string> trainingDevices(const std::vector<int> &gpus, bool allowCuda,
                                                       int cudaDevices, std::vector<int> *skipped = nullptr);
// Logs (category "system") the thread count, the BLAS in use (a warning for the reference BLAS,
// with the command that fixes it) and the device the trainer will use.
void logRuntime(bool allowCuda);
// Returns cached accelerator memory to the driver (a paused peer leaves the GPU to the user).
// No-op without CUDA.
void releaseAcceleratorMemory();
// Caps the accelerator memory the trainer's allocator may take, as a fraction (0, 1] of each
// device's memory, on the CUDA devices `cudaDevices` (indices; others are left alone: setting it
// would start a CUDA context there); allocations beyond it fail as out-of-memory. No-op without
// CUDA.
void setAcceleratorMemoryFraction(double fraction, const std::vector<int> &cudaDevices);

} // namespace dedloc
