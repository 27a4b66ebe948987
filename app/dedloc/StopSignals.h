#pragma once
// How `dedloc` stops on SIGINT (Ctrl-C), SIGTERM (kill, logout, GNU timeout, systemd) and SIGHUP
// (the terminal closed, a session's end): the first
// signal sets a flag that every mode checks (between micro-batches; each peer then writes its
// final checkpoint); a second, different or later signal exits at once without a checkpoint,
// saying so. The same signal arriving again within a second is one request, not a second
// interrupt: GNU timeout delivers its one signal to the process and to its group, and a
// terminal's Ctrl-C reaches every process of the foreground group.
//
// Threads: the handler touches only lock-free atomics (async-signal-safe); stopRequested() may be
// read from any thread.
#include <atomic>

// Installs the handler for SIGINT, SIGTERM and SIGHUP.
void installStopSignals();
// Set by the first signal.
[[nodiscard]] const std::atomic<bool> &stopRequested();
