#pragma once
// `dedloc --local-swarm N`: the main job as a swarm on this machine. Starts a monitor (the DHT
// bootstrap node, on UDP `dhtPort`) and N trainers, each its own process of this executable on
// loopback, forwards their output (status lines carry the peer's name), and stops them all on
// Ctrl-C or when the trainers end (--duration). Each peer gets its own data directory
// (<dataDir>/local-swarm/<name>) and, with a metrics directory, its own metrics file
// (<metricsDir>/<name>.jsonl; the monitor also writes swarm.jsonl with every peer's steps).
#include <QStringList>

#include <atomic>

struct LocalSwarmOptions {
    int trainers = 2;
    quint16 dhtPort = 31340;
    QString dataDir;
    QString metricsDir;        // empty: no metrics files
    QStringList peerArguments; // passed to every peer (manifest, duration, threads, ...)
};

int runLocalSwarm(const LocalSwarmOptions &options, const std::atomic<bool> &stop);
