#pragma once
// Multi-process swarm fixtures: each peer is a real `dedloc` process on loopback with its own
// data directory, metrics file and log, inside one temporary directory. Used by tst_swarm.
#include <QProcess>
#include <QString>
#include <QStringList>

#include <nlohmann/json.hpp>

#include "security/Minisign.h"

#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

namespace dedloc::test {

// The tiny run of TestSupport.h with `targetBatchSize`, no compression (bitwise comparisons),
// no validation or checkpoints in the way, written to <dir>/manifest.json and signed with a
// throw-away lead key (lead.pub beside it: peers pin it on first join). Returns the manifest path.
[[nodiscard]] std::filesystem::path writeSignedTinyRun(const std::filesystem::path &dir, long targetBatchSize = 32);

// The same run marked "access": "closed" (only peers with an access token take part); keeps the
// lead's secret key so that the test can issue tokens.
struct ClosedRun {
    std::filesystem::path manifest;
    std::string runId;
    minisign::SecretKey lead;
};
[[nodiscard]] ClosedRun writeSignedClosedTinyRun(const std::filesystem::path &dir, long targetBatchSize = 32);

// A free UDP port on 127.0.0.1 (bound and released; good enough for tests).
[[nodiscard]] quint16 freeUdpPort();

struct SwarmPeerProcess {
    QString name;
    std::filesystem::path dataDir;
    std::filesystem::path metrics;
    std::filesystem::path log;
    std::unique_ptr<QProcess> process;

    // Lines of the metrics file with "event" == `event` (default "step"), in file order.
    [[nodiscard]] std::vector<nlohmann::json> events(const char *event = "step") const;
    [[nodiscard]] long lastStep() const; // 0 if none
    [[nodiscard]] QString logText() const;
    [[nodiscard]] bool running() const;
    void kill9();
    void stopGracefully(int waitMs = 30000);
};

class SwarmHarness final {
public:
    // `manifest`: the run; `app`: the dedloc executable; `root`: a scratch directory.
    SwarmHarness(std::filesystem::path app, std::filesystem::path manifest, std::filesystem::path root);
    ~SwarmHarness(); // kills what still runs

    // Starts the monitor (the DHT bootstrap node) on a free port.
    SwarmPeerProcess &startMonitor(const QStringList &extra = {});
    // Starts a peer that bootstraps from the monitor. `extra` adds options (--role, ...).
    SwarmPeerProcess &startPeer(const QString &name, const QStringList &extra = {});

    // Polls `condition` every 100 ms for at most `seconds`; true if it held.
    static bool waitFor(const std::function<bool()> &condition, double seconds);

    [[nodiscard]] QStringList commonArguments() const;
    [[nodiscard]] quint16 dhtPort() const { return m_dhtPort; }

private:
    SwarmPeerProcess &launch(const QString &name, QStringList arguments);

    std::filesystem::path m_app;
    std::filesystem::path m_manifest;
    std::filesystem::path m_root;
    quint16 m_dhtPort = 0;
    std::vector<std::unique_ptr<SwarmPeerProcess>> m_peers;
};

} // namespace dedloc::test
