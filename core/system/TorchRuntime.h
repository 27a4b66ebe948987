#pragma once
// Process-wide libtorch settings and facts: thread count, which BLAS library is loaded, and
// whether CUDA is usable. Torch-free header. Call configureTorchThreads() once, at start-up,
// before any tensor work (torch's inter-op pool can only be sized before it starts).
#include <string>

namespace dedloc {

struct BlasInfo {
    std::string library;   // resolved path of the loaded libblas/libopenblas, or "" if none found
    std::string kind;      // "openblas-openmp", "openblas-pthread", "openblas", "reference", "mkl", "unknown"
    bool isReference = false; // netlib's reference BLAS: 8-27x slower here (docs/BENCHMARKS.md)
};

// threads <= 0: one per online CPU core. Returns the count in effect.
int configureTorchThreads(int threads);
[[nodiscard]] BlasInfo detectBlas();
[[nodiscard]] bool cudaAvailable();
// Logs (category "system") the thread count, the BLAS in use (a warning for the reference BLAS,
// with the command that fixes it) and the device the trainer will use.
void logRuntime(bool allowCuda);
// Returns cached accelerator memory to the driver (a paused peer leaves the GPU to the user).
// No-op without CUDA.
void releaseAcceleratorMemory();
// Caps the accelerator memory the trainer's allocator may take, as a fraction (0, 1] of the
// device's memory; allocations beyond it fail as out-of-memory. No-op without
// CUDA.
void setAcceleratorMemoryFraction(double fraction);

} // namespace dedloc
