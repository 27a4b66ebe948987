#pragma once
// The host facts the auto-pause policy needs besides the GPU: whether the
// machine runs on battery and which programs run. Linux only; roots injectable for tests.
//
// Sources:
//   - battery: <sysRoot>/class/power_supply/*: "on battery" when at least one supply of type
//     "Battery" reports status "Discharging" and no supply of type "Mains" reports online = 1
//     (kernel Documentation/ABI/testing/sysfs-class-power). No power_supply: not on battery.
//   - CPU temperature: the hottest tempN_input (millidegrees C) of the hwmon devices
//     <sysRoot>/class/hwmon/hwmon* whose name is a CPU's sensor (coretemp: Intel, k10temp and
//     zenpower: AMD, cpu_thermal: ARM boards); none: unknown (< 0). Kernel
//     Documentation/hwmon/sysfs-interface.
//   - programs: <procRoot>/<pid>/comm of every numeric entry (proc(5); the kernel truncates
//     names to 15 characters, so a listed name is compared with that prefix too).
//   - user idle time: not probed here (core has no D-Bus); observe() sets it unknown (< 0) and the
//     UI fills it from logind (ui/LogindIdleProbe.h).
// Errors: unreadable files count as absent; never throws. Threads: one thread at a time.
// Cost: one directory walk of /proc, a few ms with ~500 processes; the app calls it once a second.
#include "system/AutoPausePolicy.h"

#include <filesystem>
#include <string>
#include <vector>

namespace dedloc {

struct HostProbeOptions {
    std::filesystem::path sysRoot = "/sys";
    std::filesystem::path procRoot = "/proc";
};

class HostProbe final {
  public:
    explicit HostProbe(HostProbeOptions options = {});

    [[nodiscard]] bool onBattery() const;
    [[nodiscard]] double cpuTemperatureCelsius() const; // degrees C; < 0 unknown
    [[nodiscard]] std::vector<std::string> runningProcesses() const; // sorted, unique
    // Fills runningProcesses, onBattery, cpuTemperatureCelsius and userIdleSeconds of an observation
    // (gpuGraphicsProcesses comes from GpuProbe).
    void observe(HostObservation &observation) const;

  private:
    HostProbeOptions m_options;
};

} // namespace dedloc
