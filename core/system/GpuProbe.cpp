#include "system/GpuProbe.h"

#include "util/Log.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace dedloc {
namespace {

// The few NVML types we use, declared from the NVML API reference (the header is not shipped
// in Debian main, and we never link the library).
using NvmlReturn = int; // nvmlReturn_t: 0 = NVML_SUCCESS
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
using NvmlDevice = void *; // nvmlDevice_t
struct NvmlUtilization {
    unsigned gpu;
    unsigned memory;
};
struct NvmlMemory {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};
struct NvmlProcessInfoV1 {
    unsigned pid;
    unsigned long long usedGpuMemory;
};
struct NvmlProcessInfoV2 {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId;
    unsigned computeInstanceId;
};
constexpr int kNvmlTemperatureGpu = 0;

std::string readFirstLine(const std::filesystem::path &file)
{
    std::ifstream in(file);
    std::string line;
    if (in)
        std::getline(in, line);
    return line;
}

bool readNumber(const std::filesystem::path &file, double &value)
{
    const auto text = readFirstLine(file);
    if (text.empty())
        return false;
    try {
        value = std::stod(text);
        return true;
    } catch (...) {
        return false;
    }
}

} // namespace

const char *gpuVendorName(GpuVendor vendor)
{
    switch (vendor) {
    case GpuVendor::None:
        return "none";
    case GpuVendor::Nvidia:
        return "NVIDIA";
    case GpuVendor::Amd:
        return "AMD";
    }
    return "?";
}

struct GpuProbe::Nvml {
    void *handle = nullptr;
    std::vector<NvmlDevice> devices;
    std::vector<std::string> names;
    NvmlReturn (*shutdown)() = nullptr;
    NvmlReturn (*getName)(NvmlDevice, char *, unsigned) = nullptr;
    NvmlReturn (*getUtilization)(NvmlDevice, NvmlUtilization *) = nullptr;
    NvmlReturn (*getMemory)(NvmlDevice, NvmlMemory *) = nullptr;
    NvmlReturn (*getTemperature)(NvmlDevice, int, unsigned *) = nullptr;
    NvmlReturn (*getPower)(NvmlDevice, unsigned *) = nullptr;
    NvmlReturn (*getFanSpeed)(NvmlDevice, unsigned *) = nullptr;
    NvmlReturn (*getGraphicsV2)(NvmlDevice, unsigned *, NvmlProcessInfoV2 *) = nullptr; // _v3 or _v2
    NvmlReturn (*getGraphicsV1)(NvmlDevice, unsigned *, NvmlProcessInfoV1 *) = nullptr;

    ~Nvml()
    {
        if (shutdown)
            shutdown();
        if (handle)
            dlclose(handle);
    }

    template <typename F> F symbol(const char *name) const { return reinterpret_cast<F>(dlsym(handle, name)); }

    void lookUpReadings()
    {
        getName = symbol<decltype(getName)>("nvmlDeviceGetName");
        getUtilization = symbol<decltype(getUtilization)>("nvmlDeviceGetUtilizationRates");
        getMemory = symbol<decltype(getMemory)>("nvmlDeviceGetMemoryInfo");
        getTemperature = symbol<decltype(getTemperature)>("nvmlDeviceGetTemperature");
        getPower = symbol<decltype(getPower)>("nvmlDeviceGetPowerUsage");
        getFanSpeed = symbol<decltype(getFanSpeed)>("nvmlDeviceGetFanSpeed");
        getGraphicsV2 = symbol<decltype(getGraphicsV2)>("nvmlDeviceGetGraphicsRunningProcesses_v3");
        if (!getGraphicsV2)
            getGraphicsV2 = symbol<decltype(getGraphicsV2)>("nvmlDeviceGetGraphicsRunningProcesses_v2");
        if (!getGraphicsV2)
            getGraphicsV1 = symbol<decltype(getGraphicsV1)>("nvmlDeviceGetGraphicsRunningProcesses");
    }

    // Empty string on success (at least one GPU opened), otherwise why NVML cannot be used.
    std::string open(const std::string &library)
    {
        handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char *e = dlerror();
            return "NVML not found (" + std::string(e ? e : library) + ")";
        }
        auto init = symbol<NvmlReturn (*)()>("nvmlInit_v2");
        auto count = symbol<NvmlReturn (*)(unsigned *)>("nvmlDeviceGetCount_v2");
        auto byIndex = symbol<NvmlReturn (*)(unsigned, NvmlDevice *)>("nvmlDeviceGetHandleByIndex_v2");
        auto shut = symbol<NvmlReturn (*)()>("nvmlShutdown");
        if (!init || !count || !byIndex || !shut)
            return library + " lacks nvmlInit_v2 / nvmlDeviceGetCount_v2 / nvmlDeviceGetHandleByIndex_v2";
        lookUpReadings();
        if (const auto rc = init(); rc != kNvmlSuccess)
            return "nvmlInit_v2 failed (NVML error " + std::to_string(rc) + ")";
        shutdown = shut;
        unsigned n = 0;
        if (count(&n) != kNvmlSuccess || n == 0)
            return "NVML sees no GPU";
        for (unsigned i = 0; i < n && i < 64; ++i) {
            NvmlDevice device = nullptr;
            if (byIndex(i, &device) != kNvmlSuccess)
                return "NVML cannot open GPU " + std::to_string(i); // indices must stay CUDA's
            char buffer[96] = {};
            devices.push_back(device);
            names.push_back(getName && getName(device, buffer, sizeof buffer) == kNvmlSuccess
                                ? std::string(buffer)
                                : "NVIDIA GPU " + std::to_string(i));
        }
        return {};
    }
};

GpuProbe::GpuProbe(GpuProbeOptions options) : m_options(std::move(options))
{
    if (m_options.ownPid == 0)
        m_options.ownPid = unsigned(::getpid());
    std::string why;
    if (!m_options.nvmlLibrary.empty()) {
        auto nvml = std::make_unique<Nvml>();
        why = nvml->open(m_options.nvmlLibrary);
        if (why.empty()) {
            m_nvml = std::move(nvml);
            for (std::size_t i = 0; i < m_nvml->names.size(); ++i)
                log::info("system", "GPU " + std::to_string(i) + ": " + m_nvml->names[i] + " (NVML)");
            return;
        }
    }
    if (!m_options.sysRoot.empty()) {
        std::error_code ec;
        for (const auto &entry : std::filesystem::directory_iterator(m_options.sysRoot / "class" / "drm", ec)) {
            const auto file = entry.path().filename().string();
            // card0, card1 ... (not card0-DP-1 connectors)
            if (file.rfind("card", 0) != 0 || file.find('-') != std::string::npos)
                continue;
            if (readFirstLine(entry.path() / "device" / "vendor") == "0x1002")
                m_amdDevices.push_back(entry.path() / "device");
        }
        std::sort(m_amdDevices.begin(), m_amdDevices.end());
        for (std::size_t i = 0; i < m_amdDevices.size(); ++i)
            log::info("system", "GPU " + std::to_string(i) + ": AMD at " + m_amdDevices[i].string() + " (sysfs)");
        if (!m_amdDevices.empty())
            return;
        if (!why.empty())
            why += "; ";
        why += "no AMD GPU in sysfs";
    }
    m_note = why.empty() ? std::string("GPU probing disabled") : why;
    log::info("system", "no GPU found: training on CPU (" + m_note + ")");
}

GpuProbe::~GpuProbe() = default;

GpuVendor GpuProbe::vendor() const
{
    if (m_nvml)
        return GpuVendor::Nvidia;
    if (!m_amdDevices.empty())
        return GpuVendor::Amd;
    return GpuVendor::None;
}

int GpuProbe::gpuCount() const
{
    return m_nvml ? int(m_nvml->devices.size()) : int(m_amdDevices.size());
}

GpuSample GpuProbe::sample()
{
    return sampleAll().front();
}

std::vector<GpuSample> GpuProbe::sampleAll()
{
    GpuSample cpu;
    sampleCpu(cpu);
    std::vector<GpuSample> out;
    for (int i = 0; i < gpuCount(); ++i) {
        GpuSample s = cpu;
        s.vendor = vendor();
        s.index = i;
        if (m_nvml)
            sampleNvml(s, unsigned(i));
        else
            sampleAmd(s, unsigned(i));
        out.push_back(std::move(s));
    }
    if (out.empty()) {
        cpu.name = "CPU";
        cpu.note = m_note;
        out.push_back(std::move(cpu));
    }
    return out;
}

void GpuProbe::sampleNvml(GpuSample &s, unsigned index)
{
    auto &n = *m_nvml;
    const NvmlDevice device = n.devices[index];
    s.name = n.names[index];
    NvmlUtilization u{};
    if (n.getUtilization && n.getUtilization(device, &u) == kNvmlSuccess)
        s.utilisationPercent = u.gpu;
    NvmlMemory m{};
    if (n.getMemory && n.getMemory(device, &m) == kNvmlSuccess) {
        s.memoryUsedBytes = m.used;
        s.memoryTotalBytes = m.total;
    }
    unsigned t = 0;
    if (n.getTemperature && n.getTemperature(device, kNvmlTemperatureGpu, &t) == kNvmlSuccess)
        s.temperatureCelsius = t;
    unsigned mw = 0;
    if (n.getPower && n.getPower(device, &mw) == kNvmlSuccess)
        s.powerWatts = mw / 1000.0;
    unsigned fan = 0; // boards without a fan (laptops, passive) answer NVML_ERROR_NOT_SUPPORTED
    if (n.getFanSpeed && n.getFanSpeed(device, &fan) == kNvmlSuccess)
        s.fanPercent = fan;

    std::vector<std::pair<unsigned, unsigned long long>> procs;
    auto query = [&](auto fn, auto tag) {
        using Info = decltype(tag);
        std::vector<Info> infos(8);
        for (int attempt = 0; attempt < 3; ++attempt) {
            auto count = unsigned(infos.size());
            const auto rc = fn(device, &count, infos.data());
            if (rc == kNvmlSuccess) {
                for (unsigned i = 0; i < count && i < infos.size(); ++i)
                    procs.emplace_back(infos[i].pid, infos[i].usedGpuMemory);
                return;
            }
            if (rc != kNvmlInsufficientSize)
                return;
            infos.resize(std::max<std::size_t>(count + 4, infos.size() * 2));
        }
    };
    if (n.getGraphicsV2)
        query(n.getGraphicsV2, NvmlProcessInfoV2{});
    else if (n.getGraphicsV1)
        query(n.getGraphicsV1, NvmlProcessInfoV1{});
    for (const auto &[pid, bytes] : procs) {
        if (pid == m_options.ownPid)
            continue;
        std::string name = readFirstLine(m_options.procRoot / std::to_string(pid) / "comm");
        if (name.empty())
            name = "pid " + std::to_string(pid);
        const auto &ignored = m_options.ignoredGraphicsProcesses;
        if (std::find(ignored.begin(), ignored.end(), name) != ignored.end())
            continue;
        // NVML reports NVML_VALUE_NOT_AVAILABLE (all ones) when memory use is unknown.
        s.graphicsProcesses.push_back({pid, name, bytes == ~0ULL ? 0 : std::uint64_t(bytes)});
    }
}

void GpuProbe::sampleAmd(GpuSample &s, unsigned index) const
{
    const auto &d = m_amdDevices[index];
    s.name = readFirstLine(d / "product_name");
    if (s.name.empty())
        s.name = "AMD GPU " + readFirstLine(d / "device");
    double v = 0.0;
    if (readNumber(d / "gpu_busy_percent", v))
        s.utilisationPercent = v;
    if (readNumber(d / "mem_info_vram_used", v))
        s.memoryUsedBytes = std::uint64_t(v);
    if (readNumber(d / "mem_info_vram_total", v))
        s.memoryTotalBytes = std::uint64_t(v);
    std::error_code ec;
    for (const auto &hw : std::filesystem::directory_iterator(d / "hwmon", ec)) {
        if (readNumber(hw.path() / "temp1_input", v))
            s.temperatureCelsius = v / 1000.0;
        if (readNumber(hw.path() / "power1_average", v) || readNumber(hw.path() / "power1_input", v))
            s.powerWatts = v / 1e6;
        double most = 255.0; // pwm1 is the fan's duty cycle, 0..pwm1_max (255 unless it says)
        if (readNumber(hw.path() / "pwm1", v) && (!readNumber(hw.path() / "pwm1_max", most) || most > 0.0))
            s.fanPercent = std::clamp(100.0 * v / most, 0.0, 100.0);
        break;
    }
}

void GpuProbe::sampleCpu(GpuSample &s)
{
    std::ifstream in(m_options.procRoot / "stat");
    std::string line;
    int cpus = 0;
    std::uint64_t busy = 0;
    std::uint64_t total = 0;
    bool haveTotal = false;
    while (std::getline(in, line)) {
        if (line.rfind("cpu", 0) != 0)
            break;
        if (line.size() > 3 && line[3] != ' ') {
            ++cpus;
            continue;
        }
        std::istringstream fields(line.substr(3));
        std::uint64_t v[8] = {};
        int got = 0;
        while (got < 8 && (fields >> v[got]))
            ++got;
        if (got < 4)
            continue;
        const std::uint64_t idle = v[3] + v[4];
        for (int i = 0; i < got; ++i)
            total += v[i];
        busy = total - idle;
        haveTotal = true;
    }
    s.cpuCount = cpus;
    if (!haveTotal)
        return;
    const std::uint64_t dTotal = total - m_lastTotal;
    const std::uint64_t dBusy = busy - m_lastBusy;
    if (total > m_lastTotal && busy >= m_lastBusy)
        s.cpuUsagePercent = 100.0 * double(dBusy) / double(dTotal);
    else
        s.cpuUsagePercent = 0.0; // counters did not move (or went back: another /proc)
    m_lastBusy = busy;
    m_lastTotal = total;
}

} // namespace dedloc
