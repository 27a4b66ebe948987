// A stand-in for libnvidia-ml.so.1 with fixed values, for tst_gpuprobe. Exports only the
// functions GpuProbe looks up, with the NVML signatures (NVML API reference). Two GPUs: device 0
// busy with graphics processes, device 1 idle, fanless and drawing nothing.
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
void *const kSecond = reinterpret_cast<void *>(0x5678);
constexpr int kNotSupported = 3; // NVML_ERROR_NOT_SUPPORTED

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
    *count = 2;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **device)
{
    if (index > 1)
        return 2; // NVML_ERROR_INVALID_ARGUMENT
    *device = index == 0 ? kDevice : kSecond;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetName(void *device, char *name, unsigned length)
{
    if (device != kDevice && device != kSecond)
        return 2;
    std::strncpy(name, device == kDevice ? "Fake GeForce 9000" : "Fake GeForce 8000", length);
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetUtilizationRates(void *device, Utilization *u)
{
    u->gpu = device == kDevice ? 42 : 5;
    u->memory = 17;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void *device, Memory *m)
{
    m->total = (device == kDevice ? 8ULL : 4ULL) << 30;
    m->used = (device == kDevice ? 3ULL : 1ULL) << 30;
    m->free = m->total - m->used;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetTemperature(void *device, int sensor, unsigned *t)
{
    if (sensor != 0)
        return 2;
    *t = device == kDevice ? 61 : 48;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetPowerUsage(void *device, unsigned *milliwatts)
{
    *milliwatts = device == kDevice ? 123456 : 30500;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetFanSpeed(void *device, unsigned *percent)
{
    if (device != kDevice)
        return kNotSupported;
    *percent = 64;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetGraphicsRunningProcesses_v3(void *device, unsigned *count,
                                                                                    ProcessInfo *infos)
{
    if (device != kDevice) {
        *count = 0;
        return 0;
    }
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
