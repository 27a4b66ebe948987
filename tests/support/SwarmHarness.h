#pragma once
// Multi-process swarm fixtures: each peer is a real `dedloc` process on loopback with its own
// data directory, metrics file and log, inside one temporary directory. Used by tst_swarm.
#include <QProcess>
#include <QString>
#include <QStringList>

#include <nlohmann/json.hpp>

#include "compress/Compression.h"
#include "run/RunManifest.h"
#include "security/Minisign.h"

#include <cstdio>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace dedloc::test {

// The tiny run of TestSupport.h with `targetBatchSize`, no compression (bitwise comparisons),
// no checkpoints in the way and validation every `validationEvery` steps (default: none), written
// to <dir>/manifest.json and signed with a throw-away lead key (lead.pub beside it: peers pin it
// on first join). Returns the manifest path.
[[nodiscard]] std::filesystem::path writeSignedTinyRun(const std::filesystem::path &dir, long targetBatchSize = 32,
                                                       long validationEvery = 1000,
                                                       Compression codec = Compression::None);
// The same with `edit` applied to the manifest before it is written and signed.
[[nodiscard]] std::filesystem::path writeSignedTinyRun(const std::filesystem::path &dir, long targetBatchSize,
                                                       const std::function<void(RunManifest &)> &edit);

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
// A TCP port P on 127.0.0.1 such that P and P + 1 are both free (bound and released).
[[nodiscard]] quint16 freeTcpPortPair();

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
    // Starts `dedloc-lead serve` (the lead's bootstrap node and monitor; `leadApp` is the
    // dedloc-lead executable) as the swarm's bootstrap on a free DHT port, with its HTTP status
    // on a free TCP port (serveStatusPort() reads it from the log), metrics in <root>/serve/metrics.
    SwarmPeerProcess &startLeadServe(const std::filesystem::path &leadApp, const QStringList &extra = {});
    // The HTTP status port that `serve` announced in its log (0 until it did).
    [[nodiscard]] static quint16 serveStatusPort(const SwarmPeerProcess &serve);
    // Starts a peer that bootstraps from the monitor. `extra` adds options (--role, ...);
    // `program` replaces the dedloc executable (one that takes dedloc's options).
    SwarmPeerProcess &startPeer(const QString &name, const QStringList &extra = {},
                                const std::filesystem::path &program = {});

    // Polls `condition` every 100 ms for at most `seconds`; true if it held.
    static bool waitFor(const std::function<bool()> &condition, double seconds);

    // Peer ids with at least one line in the monitor's swarm.jsonl (its record of the swarm).
    [[nodiscard]] std::set<std::string> recordedPeers() const;
    // The complete lines of the monitor's swarm.jsonl, in file order.
    [[nodiscard]] std::vector<nlohmann::json> recordedLines() const;

    [[nodiscard]] QStringList commonArguments() const;
    [[nodiscard]] quint16 dhtPort() const { return m_dhtPort; }

    // Runs each process under a command prefix chosen by its name (e.g. {"ip", "netns", "exec",
    // "ns-1"} to put it in a network namespace); an empty prefix runs it directly.
    void setLauncher(std::function<QStringList(const QString &name)> prefix) { m_prefix = std::move(prefix); }
    // The address peers bootstrap from (where the monitor's DHT listens); default 127.0.0.1.
    void setBootstrapHost(const QString &host) { m_bootstrapHost = host; }

private:
    SwarmPeerProcess &launch(const QString &name, QStringList arguments, const std::filesystem::path &program = {});

    std::filesystem::path m_app;
    std::filesystem::path m_manifest;
    std::filesystem::path m_root;
    quint16 m_dhtPort = 0;
    QString m_bootstrapHost = QStringLiteral("127.0.0.1");
    std::function<QStringList(const QString &)> m_prefix;
    std::vector<std::unique_ptr<SwarmPeerProcess>> m_peers;
};

// Lines of the metrics file `file` with "event" == `event`, in file order (complete lines only).
[[nodiscard]] std::vector<nlohmann::json> metricsEvents(const std::filesystem::path &file, const char *event = "step");
// The epoch a trainer's metrics file says it reached: the highest step of its own steps and of
// the epochs it caught up to (`catch_up`: a state download or replayed updates); -1 if none.
[[nodiscard]] long lastEpoch(const std::filesystem::path &file);
// A peer's step events by step number (the last one of each step).
[[nodiscard]] std::map<long, nlohmann::json> byStep(const SwarmPeerProcess &peer);
// True when none of `peers` is still running.
[[nodiscard]] bool finished(std::initializer_list<SwarmPeerProcess *> peers);
// Prints the peers' logs in full on stderr (a QVERIFY2 message is cut short) and returns a short
// summary per peer (last step, running or exit code, end of its log) for the assertion message.
[[nodiscard]] QString failureReport(std::initializer_list<SwarmPeerProcess *> peers);
// Text that failureReport prints before the logs (a test's own summary of what it checks), until
// replaced; "" for none.
void setFailureContext(const std::string &text);

} // namespace dedloc::test

// Like QVERIFY2, but prints the peers' logs only when the condition fails (needs <QTest>). The
// condition is printed first as well: a CI excerpt that keeps only the head and tail of a long
// output still shows which check failed.
#define SWARM_VERIFY(condition, ...)                                                               \
    do {                                                                                           \
        if (!(condition)) {                                                                        \
            std::fprintf(stderr, "===== failed at %s:%d: %s\n", __FILE__, __LINE__, #condition);   \
            const QString report = dedloc::test::failureReport(__VA_ARGS__);                       \
            QVERIFY2(false, qPrintable(QStringLiteral(#condition " failed") + report));            \
        }                                                                                          \
    } while (false)
