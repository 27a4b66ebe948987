#pragma once
// `dedloc-lead serve`: the lead's bootstrap node and monitor in one command. A monitor peer
// (peer/SwarmPeer.h, role monitor) on a fixed DHT port and host, recording every peer's step
// metrics as JSON lines and CSV (monitor/SwarmMetricsRecorder.h, monitor/MetricsCsv.h), keeping the last
// states it downloaded (monitor/CheckpointArchive.h) and serving as the state donor of last
// resort, plus a read-only JSON status over HTTP (monitor/StatusHttpServer.h,
// monitor/ServeStatus.h). Argument parsing and wiring only; docs/LEAD_GUIDE.md section 6.
// Runs in the dedloc-lead-serve program (ServeMain.cpp), which `dedloc-lead serve` execs.
#include <QStringList>

namespace dedloc::lead {

// Returns the exit code: 0 after a clean stop (Ctrl-C, SIGTERM, --duration), 2 for bad input
// (options, manifest, a port in use, an unwritable directory), with the reason printed.
int serve(const QStringList &args);

} // namespace dedloc::lead
