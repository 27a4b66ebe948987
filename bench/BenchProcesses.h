#pragma once
// Child processes of the benchmarks: stop signals in the coordinator, spawning a copy of this
// executable (optionally inside a network namespace, through `ip netns exec`), and reaping.
//
// installStopSignals(): SIGINT and SIGTERM set stopSignal() instead of ending the process, so
// that the coordinator stops its children, removes its temporary files and network namespaces,
// and exits with 128 + the signal. Children keep the default dispositions (posix_spawn resets
// handled signals to their defaults).
#include <csignal>
#include <string>
#include <sys/types.h>
#include <vector>

namespace dedloc::bench {

void installStopSignals();
// The signal that asked the coordinator to stop, 0 while none came.
[[nodiscard]] int stopSignal();

// Spawns `args` (args[0]: a path), inside the network namespace `ns` unless it is empty.
// Returns the child's pid, or -1 if it could not be started.
pid_t spawnIn(const std::string &ns, std::vector<std::string> args);

// Reaps every child; after a stop signal, stops the ones still running first (SIGTERM). Returns
// whether each exited with 0 and no stop signal came.
bool waitForChildren(std::vector<pid_t> children);

// A path to this process's executable (/proc/<pid>/exe), for spawning copies of it; valid while
// this process runs, even when the file on disk has been replaced.
[[nodiscard]] std::string selfExecutable();

} // namespace dedloc::bench
