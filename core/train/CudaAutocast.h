#pragma once
// Mixed precision on the GPU: bf16 autocast for the forward pass (docs/DECISIONS.md: bf16 has
// fp32's exponent range, so it needs no loss scaling). Autocast state is thread-local: a guard
// covers the calling thread only, and a replica's thread makes its own.
//
// libtorch 2.4 replaced at::autocast::set_enabled / set_autocast_gpu_dtype (CUDA only) with calls
// that name the device type; both are supported, so Debian's libtorch 1.13 and a current
// official CUDA libtorch build the same code.
#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace dedloc {

class CudaAutocast {
public:
    // Turns bf16 autocast on for CUDA when `enabled` (a tensor's is_cuda()); else does nothing.
    explicit CudaAutocast(bool enabled) : m_enabled(enabled)
    {
        if (m_enabled)
            set(true);
    }
    ~CudaAutocast()
    {
        if (m_enabled) {
            set(false);
            at::autocast::clear_cache();
        }
    }
    CudaAutocast(const CudaAutocast &) = delete;
    CudaAutocast &operator=(const CudaAutocast &) = delete;

private:
    static void set(bool on)
    {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
        at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
        at::autocast::set_autocast_enabled(at::kCUDA, on);
#else
        at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
        at::autocast::set_enabled(on);
#endif
    }
    bool m_enabled;
};

} // namespace dedloc
