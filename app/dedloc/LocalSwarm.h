#pragma once
// `dedloc --local-swarm N`: the main job as a swarm on this machine. Starts a monitor (the DHT
// bootstrap node, on UDP `dhtPort`) and trainers, each its own process of this executable on
// loopback (or on `host`, so that other machines can join), forwards their output (status lines carry the peer's name), and stops them all on
// Ctrl-C or when the trainers end (--duration). Each peer gets its own data directory
// (<dataDir>/local-swarm/<name>) and, with a metrics directory, its own metrics file
// (<metricsDir>/<name>.jsonl; the monitor also writes swarm.jsonl with every peer's steps).
// With a window, the window's process is one of the trainers and the launcher starts the rest.
// Signals: every peer runs in its own process group, so a terminal's Ctrl-C reaches only the
// launcher, which stops each peer with one SIGTERM (each checkpoints); if the launcher dies, its
// peers get SIGTERM from the kernel (PR_SET_PDEATHSIG).
#include <QProcess>
#include <QStringList>

#include <atomic>
#include <memory>
#include <vector>

struct LocalSwarmOptions {
    int trainers = 2;          // trainer processes this launcher starts
    quint16 dhtPort = 31340;
    QString host = QStringLiteral("127.0.0.1"); // every peer binds and advertises it (--host)
    QString dataDir;
    QString metricsDir;        // empty: no metrics files
    int threads = 1;           // --threads of every peer (0: all cores)
    QStringList peerArguments; // passed to every peer (manifest, duration, --min-peers, ...)
    // --client-mode: the trainers connect out only, as behind NAT; the monitor then reduces for
    // them (--reduce), as `dedloc-lead serve` does.
    bool clientTrainers = false;
};

class LocalSwarm final {
public:
    explicit LocalSwarm(LocalSwarmOptions options);
    ~LocalSwarm(); // stops every peer still running

    // Starts the monitor and the trainers; returns 0, or an exit code with the reason printed.
    int start(int firstTrainerNumber = 1);
    // "<host>:<dhtPort>"
    [[nodiscard]] QString bootstrap() const;
    // Blocks until the trainers end, the monitor dies or `stop` is set; returns the first
    // non-zero trainer exit code. A peer that ends before the others is reported at once on
    // stderr (its name and exit code, or that it was killed), and the others go on.
    int wait(const std::atomic<bool> &stop);
    void stopAll();

private:
    std::unique_ptr<QProcess> startPeer(const QString &name, QStringList arguments);
    void reportEnd(std::size_t peer); // once per peer that failed or was killed

    LocalSwarmOptions m_options;
    std::vector<std::unique_ptr<QProcess>> m_peers; // [0] is the monitor
    std::vector<QString> m_names;                   // of m_peers, same order
    std::vector<bool> m_reported;                   // the peer's end was reported (wait())
};
