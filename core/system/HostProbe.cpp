#include "system/HostProbe.h"

#include <algorithm>
#include <cctype>
#include <fstream>

namespace dedloc {
namespace {

std::string firstLine(const std::filesystem::path &file)
{
    std::ifstream in(file);
    std::string line;
    if (in)
        std::getline(in, line);
    return line;
}

} // namespace

HostProbe::HostProbe(HostProbeOptions options) : m_options(std::move(options)) {}

bool HostProbe::onBattery() const
{
    std::error_code ec;
    bool discharging = false;
    bool mainsOnline = false;
    for (const auto &supply : std::filesystem::directory_iterator(m_options.sysRoot / "class" / "power_supply", ec)) {
        const auto type = firstLine(supply.path() / "type");
        if (type == "Mains" && firstLine(supply.path() / "online") == "1")
            mainsOnline = true;
        if (type == "Battery" && firstLine(supply.path() / "status") == "Discharging")
            discharging = true;
    }
    return discharging && !mainsOnline;
}

std::vector<std::string> HostProbe::runningProcesses() const
{
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto &entry : std::filesystem::directory_iterator(m_options.procRoot, ec)) {
        const auto pid = entry.path().filename().string();
        if (pid.empty() || !std::all_of(pid.begin(), pid.end(), [](unsigned char c) { return std::isdigit(c); }))
            continue;
        auto name = firstLine(entry.path() / "comm");
        if (!name.empty())
            names.push_back(std::move(name));
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
}

double HostProbe::cpuTemperatureCelsius() const
{
    static const char *const cpuSensors[] = {"coretemp", "k10temp", "zenpower", "cpu_thermal", "cpu-thermal"};
    double hottest = -1.0;
    std::error_code ec;
    for (const auto &hwmon : std::filesystem::directory_iterator(m_options.sysRoot / "class" / "hwmon", ec)) {
        const auto name = firstLine(hwmon.path() / "name");
        if (std::find(std::begin(cpuSensors), std::end(cpuSensors), name) == std::end(cpuSensors))
            continue;
        std::error_code inner;
        for (const auto &file : std::filesystem::directory_iterator(hwmon.path(), inner)) {
            const auto f = file.path().filename().string();
            if (f.rfind("temp", 0) != 0 || f.size() < 11 || f.compare(f.size() - 6, 6, "_input") != 0)
                continue;
            try {
                const double millidegrees = std::stod(firstLine(file.path()));
                if (millidegrees > -50000.0 && millidegrees < 200000.0) // a sensor's plausible range
                    hottest = std::max(hottest, millidegrees / 1000.0);
            } catch (const std::exception &) { // unreadable or not a number: absent
            }
        }
    }
    return hottest;
}

void HostProbe::observe(HostObservation &observation) const
{
    observation.onBattery = onBattery();
    observation.cpuTemperatureCelsius = cpuTemperatureCelsius();
    observation.runningProcesses = runningProcesses();
    observation.userIdleSeconds = -1.0;
}

} // namespace dedloc
