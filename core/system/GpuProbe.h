#pragma once
// What the accelerator (or, without one, the CPU) is doing: for the GPU panel and the auto-pause
// policy.
//
// Sources, tried in this order when the probe is made:
//   1. NVIDIA: NVML, loaded at run time with dlopen (default "libnvidia-ml.so.1"; never linked,
//      so the app starts on machines without the driver). Functions used, from the NVML API
//      reference (docs.nvidia.com/deploy/nvml-api): nvmlInit_v2, nvmlShutdown,
//      nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetName,
//      nvmlDeviceGetUtilizationRates (percent over the driver's last sample period),
//      nvmlDeviceGetMemoryInfo (bytes), nvmlDeviceGetTemperature (NVML_TEMPERATURE_GPU, degrees C),
//      nvmlDeviceGetPowerUsage (milliwatts), nvmlDeviceGetFanSpeed (percent of the fan's maximum;
//      boards without a fan answer not supported), nvmlDeviceGetGraphicsRunningProcesses_v3 (falling
//      back to _v2 and the unversioned v1 of older drivers).
//   2. AMD: sysfs, <sysRoot>/class/drm/card*/device with vendor 0x1002 (amdgpu): gpu_busy_percent,
//      mem_info_vram_used / mem_info_vram_total (bytes), hwmon/hwmon*/temp1_input (millidegrees C),
//      power1_average (microwatts), pwm1 / pwm1_max (the fan's duty cycle; pwm1_max 255 when
//      absent; kernel Documentation/hwmon/sysfs-interface), product_name when present. amdgpu lists no graphics processes.
//   3. None: "training on CPU"; the sample carries CPU usage only.
// CPU usage is always filled: the busy share of all CPUs between two sample() calls, from the
// first line of <procRoot>/stat (fields user nice system idle iowait irq softirq steal; idle +
// iowait count as idle; proc(5)). The first call reports the average since boot.
//
// Graphics processes exclude this process and the names in `ignoredGraphicsProcesses` (display
// servers and desktop shells hold a graphics context on every desktop; they are not "a game").
// Names come from <procRoot>/<pid>/comm.
//
// Errors: a missing or broken NVML / sysfs is not an error: the probe falls back and says why in
// `note`. A missing <procRoot>/stat leaves cpuUsagePercent < 0. Never throws after construction.
// Threads: one thread at a time (the GUI thread's tick in the app); sample() takes well under 1 ms
// on sysfs and a few ms on NVML.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace dedloc {

enum class GpuVendor { None, Nvidia, Amd };

struct GpuProcess {
    unsigned pid = 0;
    std::string name;            // from /proc/<pid>/comm; "pid <n>" when unreadable
    std::uint64_t usedBytes = 0; // accelerator memory, when the driver says
};

struct GpuSample {
    GpuVendor vendor = GpuVendor::None;
    int index = -1;                    // the GPU's index (GpuProbeOptions order); -1: the CPU
    std::string name;                  // "NVIDIA GeForce RTX 3080"; "CPU" when vendor == None
    double utilisationPercent = -1.0;  // 0..100; < 0 unknown
    std::uint64_t memoryUsedBytes = 0; // accelerator memory; 0/0 unknown
    std::uint64_t memoryTotalBytes = 0;
    double temperatureCelsius = -1.0;          // < 0 unknown
    double powerWatts = -1.0;                  // < 0 unknown
    double fanPercent = -1.0;                  // 0..100 of the fan's maximum; < 0 unknown or no fan
    std::vector<GpuProcess> graphicsProcesses; // other processes drawing on this GPU
    double cpuUsagePercent = -1.0;             // all CPUs, 0..100; < 0 unknown
    int cpuCount = 0;                          // logical CPUs in /proc/stat
    std::string note;                          // why no GPU is shown ("NVML not found: ...")
};

struct GpuProbeOptions {
    std::string nvmlLibrary = "libnvidia-ml.so.1"; // "" skips NVML
    std::filesystem::path sysRoot = "/sys";        // "" skips AMD
    std::filesystem::path procRoot = "/proc";
    unsigned ownPid = 0;      // 0: getpid()
    std::vector<std::string> ignoredGraphicsProcesses = {
        "Xorg",   "Xwayland", "X",        "gnome-shell", "kwin_x11", "kwin_wayland", "plasmashell", "sway",
        "mutter", "xfwm4",    "cinnamon", "compiz",      "picom",    "weston",       "Hyprland"};
};

[[nodiscard]] const char *gpuVendorName(GpuVendor vendor); // "NVIDIA", "AMD", "none"

class GpuProbe final {
  public:
    explicit GpuProbe(GpuProbeOptions options = {});
    ~GpuProbe();
    GpuProbe(const GpuProbe &) = delete;
    GpuProbe &operator=(const GpuProbe &) = delete;

    [[nodiscard]] GpuVendor vendor() const;
    [[nodiscard]] int gpuCount() const; // 0: none (the CPU sample only)
    // The first GPU (index 0), or the CPU when there is none.
    [[nodiscard]] GpuSample sample();
    // Every GPU in index order (NVML's index, which is the PCI bus order; the n-th amdgpu card
    // by sysfs name), each with the same CPU usage; one CPU sample (index -1) when none.
    [[nodiscard]] std::vector<GpuSample> sampleAll();

  private:
    struct Nvml;
    GpuProbeOptions m_options;
    std::unique_ptr<Nvml> m_nvml;
    std::vector<std::filesystem::path> m_amdDevices; // .../class/drm/cardN/device
    std::string m_note;
    std::uint64_t m_lastBusy = 0, m_lastTotal = 0;

    void sampleNvml(GpuSample &s, unsigned index);
    void sampleAmd(GpuSample &s, unsigned index) const;
    void sampleCpu(GpuSample &s);
};

} // namespace dedloc
