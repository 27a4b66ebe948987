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

void HostProbe::observe(HostObservation &observation) const
{
    observation.onBattery = onBattery();
    observation.runningProcesses = runningProcesses();
    observation.userIdleSeconds = -1.0;
}

} // namespace dedloc
