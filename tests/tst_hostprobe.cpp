// Host probe (core/system/HostProbe.h) over fake /sys and /proc trees.
#include "system/HostProbe.h"

#include <QTemporaryDir>
#include <QtTest>

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

} // namespace

class TestHostProbe final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void battery_data()
    {
        QTest::addColumn<QString>("mainsOnline");   // "" = no mains supply
        QTest::addColumn<QString>("batteryStatus"); // "" = no battery
        QTest::addColumn<bool>("onBattery");
        QTest::newRow("laptop unplugged") << "0"
                                          << "Discharging" << true;
        QTest::newRow("laptop plugged, charging") << "1"
                                                  << "Charging" << false;
        QTest::newRow("plugged but reports discharging") << "1"
                                                         << "Discharging" << false;
        QTest::newRow("battery only, discharging") << ""
                                                   << "Discharging" << true;
        QTest::newRow("battery full") << "0"
                                      << "Full" << false;
        QTest::newRow("desktop (mains only)") << "1"
                                              << "" << false;
        QTest::newRow("no power_supply") << ""
                                         << "" << false;
    }

    void battery()
    {
        QFETCH(QString, mainsOnline);
        QFETCH(QString, batteryStatus);
        QFETCH(bool, onBattery);
        QTemporaryDir dir;
        const fs::path sys = dir.path().toStdString();
        const auto ps = sys / "class" / "power_supply";
        if (!mainsOnline.isEmpty()) {
            writeFile(ps / "AC" / "type", "Mains");
            writeFile(ps / "AC" / "online", mainsOnline.toStdString());
        }
        if (!batteryStatus.isEmpty()) {
            writeFile(ps / "BAT0" / "type", "Battery");
            writeFile(ps / "BAT0" / "status", batteryStatus.toStdString());
        }
        writeFile(ps / "hidpp_battery_0" / "type", "Battery"); // a wireless mouse: not the host
        writeFile(ps / "hidpp_battery_0" / "status", "Full");
        HostProbe probe({sys, sys / "no-proc"});
        QCOMPARE(probe.onBattery(), onBattery);
    }

    void processes()
    {
        QTemporaryDir dir;
        const fs::path proc = dir.path().toStdString();
        writeFile(proc / "1" / "comm", "systemd");
        writeFile(proc / "812" / "comm", "blender");
        writeFile(proc / "813" / "comm", "blender"); // duplicates collapse
        writeFile(proc / "900" / "comm", "steamwebhelper");
        writeFile(proc / "self" / "comm", "not-a-pid"); // non-numeric entries are skipped
        fs::create_directories(proc / "901");           // a process that just exited: no comm
        HostProbe probe({proc / "no-sys", proc});
        const auto names = probe.runningProcesses();
        QCOMPARE(names, (std::vector<std::string>{"blender", "steamwebhelper", "systemd"}));

        HostObservation o;
        o.userIdleSeconds = 3.0;
        probe.observe(o);
        QCOMPARE(o.runningProcesses.size(), std::size_t(3));
        QCOMPARE(o.onBattery, false);
        QCOMPARE(o.userIdleSeconds, -1.0); // not probed: unknown

        // The probe and the policy together: a listed app found in /proc pauses.
        AutoPauseRules rules;
        rules.listedApplications = {"Blender"};
        AutoPausePolicy policy(rules, [] { return LocalClockReading{0.0, 0}; });
        QCOMPARE(QString::fromStdString(policy.evaluate(o).reason), QString("Blender is running"));
    }

    void truncatedNamesMatch()
    {
        // The kernel keeps 15 characters of a name: "DaVinci Resolve Studio" shows as "DaVinci Resolve".
        AutoPauseRules rules;
        rules.listedApplications = {"DaVinci Resolve Studio"};
        AutoPausePolicy policy(rules, [] { return LocalClockReading{0.0, 0}; });
        HostObservation o;
        o.runningProcesses = {"DaVinci Resolve"};
        QVERIFY(policy.evaluate(o).paused);
    }

    // The hottest input of the CPU's hwmon sensors; other sensors (the GPU's, the NVMe's) and
    // broken files do not count; no CPU sensor: unknown.
    void cpuTemperature()
    {
        QTemporaryDir dir;
        const fs::path sys = dir.path().toStdString();
        HostProbe probe({sys, sys / "proc"});
        QCOMPARE(probe.cpuTemperatureCelsius(), -1.0);
        const auto hwmon = sys / "class" / "hwmon";
        writeFile(hwmon / "hwmon0" / "name", "nvme");
        writeFile(hwmon / "hwmon0" / "temp1_input", "91000");
        writeFile(hwmon / "hwmon1" / "name", "amdgpu");
        writeFile(hwmon / "hwmon1" / "temp1_input", "88000");
        QCOMPARE(probe.cpuTemperatureCelsius(), -1.0);
        writeFile(hwmon / "hwmon2" / "name", "coretemp");
        writeFile(hwmon / "hwmon2" / "temp1_input", "67000"); // package
        writeFile(hwmon / "hwmon2" / "temp2_input", "71500"); // hottest core
        writeFile(hwmon / "hwmon2" / "temp3_input", "garbage");
        writeFile(hwmon / "hwmon2" / "temp3_label", "Core 1");
        writeFile(hwmon / "hwmon2" / "temp4_input", "999999999"); // a broken sensor
        QCOMPARE(probe.cpuTemperatureCelsius(), 71.5);
        HostObservation o;
        probe.observe(o);
        QCOMPARE(o.cpuTemperatureCelsius, 71.5);
    }
};

QTEST_GUILESS_MAIN(TestHostProbe)
#include "tst_hostprobe.moc"
