// GPU / CPU probe (core/system/GpuProbe.h): NVML through a fake libnvidia-ml built by the tests,
// AMD through a fake sysfs tree, and the no-GPU path with CPU usage from a fake /proc/stat.
#include "system/GpuProbe.h"

#include <QtTest>

#include <dlfcn.h>

#include <filesystem>
#include <fstream>

using namespace dedloc;
namespace fs = std::filesystem;

namespace {

void writeFile(const fs::path &file, const std::string &text)
{
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text << "\n";
}

// /proc/stat: aggregate line, then one line per CPU.
void writeStat(const fs::path &proc, const std::string &cpuLine)
{
    writeFile(proc / "stat", "cpu  " + cpuLine + "\ncpu0 1 2 3 4 5 6 7 8\ncpu1 1 2 3 4 5 6 7 8\nintr 12345");
}

} // namespace

class TestGpuProbe final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void nvmlThroughFakeLibrary()
    {
        QTemporaryDir dir;
        const fs::path proc = dir.path().toStdString();
        writeStat(proc, "100 0 100 800 0 0 0 0");
        writeFile(proc / "100" / "comm", "Xorg");
        writeFile(proc / "4242" / "comm", "game.exe");
        writeFile(proc / "7" / "comm", "dedloc");

        // Keep the fake loaded across the probe's dlclose to read its init counter.
        void *keep = dlopen(DEDLOC_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
        QVERIFY2(keep, dlerror());
        auto openCount = reinterpret_cast<int (*)()>(dlsym(keep, "fakeNvmlOpenCount"));
        QVERIFY(openCount);
        {
            GpuProbeOptions o;
            o.nvmlLibrary = DEDLOC_FAKE_NVML;
            o.sysRoot = "";
            o.procRoot = proc;
            o.ownPid = 7;
            GpuProbe probe(o);
            QCOMPARE(probe.vendor(), GpuVendor::Nvidia);
            QCOMPARE(openCount(), 1);
            const auto s = probe.sample();
            QCOMPARE(s.vendor, GpuVendor::Nvidia);
            QCOMPARE(QString::fromStdString(s.name), QString("Fake GeForce 9000"));
            QCOMPARE(s.utilisationPercent, 42.0);
            QCOMPARE(s.memoryUsedBytes, std::uint64_t(3) << 30);
            QCOMPARE(s.memoryTotalBytes, std::uint64_t(8) << 30);
            QCOMPARE(s.temperatureCelsius, 61.0);
            QCOMPARE(s.powerWatts, 123.456);
            QCOMPARE(s.fanPercent, 64.0);
            // 12 reported: own pid 7 and Xorg dropped; 4242 named from comm, 200..208 by pid.
            QCOMPARE(int(s.graphicsProcesses.size()), 10);
            QCOMPARE(s.graphicsProcesses[0].pid, 4242u);
            QCOMPARE(QString::fromStdString(s.graphicsProcesses[0].name), QString("game.exe"));
            QCOMPARE(s.graphicsProcesses[0].usedBytes, std::uint64_t(3) << 20);
            QCOMPARE(QString::fromStdString(s.graphicsProcesses[1].name), QString("pid 200"));
            QCOMPARE(s.cpuCount, 2);
            QCOMPARE(s.cpuUsagePercent, 20.0);
            QCOMPARE(s.index, 0);

            // Every GPU, in NVML's order, each with its own readings and the same CPU usage.
            QCOMPARE(probe.gpuCount(), 2);
            writeStat(proc, "400 0 100 1000 0 0 0 0"); // +300 busy of +500
            const auto all = probe.sampleAll();
            QCOMPARE(int(all.size()), 2);
            QCOMPARE(all[0].index, 0);
            QCOMPARE(all[0].temperatureCelsius, 61.0);
            QCOMPARE(int(all[0].graphicsProcesses.size()), 10);
            const auto &second = all[1];
            QCOMPARE(second.index, 1);
            QCOMPARE(second.vendor, GpuVendor::Nvidia);
            QCOMPARE(QString::fromStdString(second.name), QString("Fake GeForce 8000"));
            QCOMPARE(second.utilisationPercent, 5.0);
            QCOMPARE(second.memoryUsedBytes, std::uint64_t(1) << 30);
            QCOMPARE(second.memoryTotalBytes, std::uint64_t(4) << 30);
            QCOMPARE(second.temperatureCelsius, 48.0);
            QCOMPARE(second.powerWatts, 30.5);
            QCOMPARE(second.fanPercent, -1.0); // fanless: not supported
            QVERIFY(second.graphicsProcesses.empty());
            QCOMPARE(all[0].cpuUsagePercent, 60.0);
            QCOMPARE(second.cpuUsagePercent, 60.0);
        }
        QCOMPARE(openCount(), 0); // nvmlShutdown called by the destructor
        dlclose(keep);
    }

    void nvmlMissingFallsBackToCpu()
    {
        QTemporaryDir dir;
        const fs::path root = dir.path().toStdString();
        writeStat(root / "proc", "100 0 100 800 0 0 0 0");
        fs::create_directories(root / "sys" / "class" / "drm");
        GpuProbeOptions o;
        o.nvmlLibrary = (root / "no-such-libnvidia-ml.so.1").string();
        o.sysRoot = root / "sys";
        o.procRoot = root / "proc";
        GpuProbe probe(o);
        QCOMPARE(probe.vendor(), GpuVendor::None);
        auto s = probe.sample();
        QCOMPARE(s.vendor, GpuVendor::None);
        QCOMPARE(QString::fromStdString(s.name), QString("CPU"));
        QCOMPARE(s.index, -1);
        QCOMPARE(probe.gpuCount(), 0);
        QCOMPARE(int(probe.sampleAll().size()), 1);
        QVERIFY2(QString::fromStdString(s.note).contains("NVML not found"), s.note.c_str());
        QVERIFY2(QString::fromStdString(s.note).contains("no AMD GPU"), s.note.c_str());
        QCOMPARE(s.utilisationPercent, -1.0);
        QCOMPARE(s.memoryTotalBytes, std::uint64_t(0));
        QVERIFY(s.graphicsProcesses.empty());
        // since boot: busy (user + system) 200 of 1000
        QCOMPARE(s.cpuUsagePercent, 20.0);
        // between samples: busy +300 of +500 jiffies
        writeStat(root / "proc", "400 0 100 1000 0 0 0 0");
        s = probe.sample();
        QCOMPARE(s.cpuUsagePercent, 60.0);
        // iowait counts as idle: +0 busy of +100
        writeStat(root / "proc", "400 0 100 1000 100 0 0 0");
        QCOMPARE(probe.sample().cpuUsagePercent, 0.0);
    }

    void noProcStat()
    {
        QTemporaryDir dir;
        GpuProbeOptions o;
        o.nvmlLibrary = "";
        o.sysRoot = "";
        o.procRoot = dir.path().toStdString();
        GpuProbe probe(o);
        const auto s = probe.sample();
        QCOMPARE(s.cpuUsagePercent, -1.0);
        QCOMPARE(s.cpuCount, 0);
    }

    void amdThroughSysfs()
    {
        QTemporaryDir dir;
        const fs::path root = dir.path().toStdString();
        const auto drm = root / "sys" / "class" / "drm";
        writeFile(drm / "card0" / "device" / "vendor", "0x8086"); // integrated Intel: not used
        writeFile(drm / "card0-DP-1" / "status", "connected");
        const auto amd = drm / "card1" / "device";
        writeFile(amd / "vendor", "0x1002");
        writeFile(amd / "device", "0x744c");
        writeFile(amd / "product_name", "Radeon RX 7900 XTX");
        writeFile(amd / "gpu_busy_percent", "73");
        writeFile(amd / "mem_info_vram_used", "1073741824");
        writeFile(amd / "mem_info_vram_total", "25753026560");
        writeFile(amd / "hwmon" / "hwmon3" / "temp1_input", "55000");
        writeFile(amd / "hwmon" / "hwmon3" / "power1_average", "87000000");
        writeFile(amd / "hwmon" / "hwmon3" / "pwm1", "102");
        writeStat(root / "proc", "1 0 1 8 0 0 0 0");

        GpuProbeOptions o;
        o.nvmlLibrary = "";
        o.sysRoot = root / "sys";
        o.procRoot = root / "proc";
        GpuProbe probe(o);
        QCOMPARE(probe.vendor(), GpuVendor::Amd);
        const auto s = probe.sample();
        QCOMPARE(QString::fromStdString(s.name), QString("Radeon RX 7900 XTX"));
        QCOMPARE(s.utilisationPercent, 73.0);
        QCOMPARE(s.memoryUsedBytes, std::uint64_t(1073741824));
        QCOMPARE(s.memoryTotalBytes, std::uint64_t(25753026560ULL));
        QCOMPARE(s.temperatureCelsius, 55.0);
        QCOMPARE(s.powerWatts, 87.0);
        QCOMPARE(s.fanPercent, 40.0); // 102 of 255
        QCOMPARE(s.cpuUsagePercent, 20.0);

        // Without product_name the PCI device id names it.
        fs::remove(amd / "product_name");
        QCOMPARE(QString::fromStdString(probe.sample().name), QString("AMD GPU 0x744c"));

        // A second amdgpu card is GPU 1 (cards in sysfs name order), read from its own files.
        const auto other = drm / "card2" / "device";
        writeFile(other / "vendor", "0x1002");
        writeFile(other / "product_name", "Radeon RX 6600");
        writeFile(other / "hwmon" / "hwmon5" / "temp1_input", "71000");
        GpuProbe two(o);
        QCOMPARE(two.gpuCount(), 2);
        const auto all = two.sampleAll();
        QCOMPARE(int(all.size()), 2);
        QCOMPARE(all[0].index, 0);
        QCOMPARE(all[0].temperatureCelsius, 55.0);
        QCOMPARE(all[1].index, 1);
        QCOMPARE(QString::fromStdString(all[1].name), QString("Radeon RX 6600"));
        QCOMPARE(all[1].temperatureCelsius, 71.0);
        QCOMPARE(all[1].utilisationPercent, -1.0);
    }

    void vendorNames()
    {
        QCOMPARE(QString(gpuVendorName(GpuVendor::Nvidia)), QString("NVIDIA"));
        QCOMPARE(QString(gpuVendorName(GpuVendor::Amd)), QString("AMD"));
        QCOMPARE(QString(gpuVendorName(GpuVendor::None)), QString("none"));
    }
};

QTEST_GUILESS_MAIN(TestGpuProbe)
#include "tst_gpuprobe.moc"
