// A stand-in for libnvidia-ml.so.1 with fixed values, for tst_gpuprobe. Exports only the
// functions GpuProbe looks up, with the NVML signatures (NVML API reference).
#include <cstring>

namespace {
struct Utilization {
    unsigned gpu;
    unsigned memory;
};
struct Memory {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};
struct ProcessInfo {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId;
    unsigned computeInstanceId;
};
int g_initCount = 0;
void *const kDevice = reinterpret_cast<void *>(0x1234);

// 12 graphics processes (more than the probe's first buffer of 8, so the resize path runs):
// 7 = the probe's own pid (test injects it), 100 = Xorg (ignored), 4242 = the game, 200..208 unnamed.
constexpr unsigned kPids[] = {7, 100, 4242, 200, 201, 202, 203, 204, 205, 206, 207, 208};
constexpr unsigned kCount = sizeof kPids / sizeof kPids[0];
} // namespace

extern "C" {
__attribute__((visibility("default"))) int nvmlInit_v2()
{
    ++g_initCount;
    return 0;
}
__attribute__((visibility("default"))) int nvmlShutdown()
{
    --g_initCount;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned *count)
{
    *count = 1;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **device)
{
    if (index != 0)
        return 2; // NVML_ERROR_INVALID_ARGUMENT
    *device = kDevice;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetName(void *device, char *name, unsigned length)
{
    if (device != kDevice)
        return 2;
    std::strncpy(name, "Fake GeForce 9000", length);
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetUtilizationRates(void *, Utilization *u)
{
    u->gpu = 42;
    u->memory = 17;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void *, Memory *m)
{
    m->total = 8ULL << 30;
    m->used = 3ULL << 30;
    m->free = m->total - m->used;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetTemperature(void *, int sensor, unsigned *t)
{
    if (sensor != 0)
        return 2;
    *t = 61;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetPowerUsage(void *, unsigned *milliwatts)
{
    *milliwatts = 123456;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetFanSpeed(void *, unsigned *percent)
{
    *percent = 64;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetGraphicsRunningProcesses_v3(void *, unsigned *count,
                                                                                    ProcessInfo *infos)
{
    if (*count < kCount) {
        *count = kCount;
        return 7; // NVML_ERROR_INSUFFICIENT_SIZE
    }
    for (unsigned i = 0; i < kCount; ++i)
        infos[i] = {kPids[i], (i + 1ULL) << 20, 0, 0};
    *count = kCount;
    return 0;
}
// For the test: how many nvmlInit_v2 calls are not matched by nvmlShutdown.
__attribute__((visibility("default"))) int fakeNvmlOpenCount()
{
    return g_initCount;
}
}
