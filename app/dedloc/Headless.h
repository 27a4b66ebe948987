#pragma once
// A swarm peer without a window: prints a status line every `statusInterval` seconds and serves
// the control socket (ControlChannel.h) at `controlPath` ("" serves none): `dedloc ctl` can ask
// its status, pause it (for a while), resume it and make it quit. Runs until `stop` is set (a
// signal), the peer stops or fails, or `dedloc ctl quit`; then stops the peer (its final
// checkpoint) and returns its exit code.
#include "peer/SwarmPeer.h"

#include <QString>

#include <atomic>
#include <string>

struct HeadlessOptions {
    double statusInterval = 10.0; // seconds; <= 0: no status lines
    std::string name;             // a local swarm's peer name, prefixed to the status lines
    QString controlPath;
    bool startPaused = false;     // --start-paused: joins, then waits for `dedloc ctl resume`
};

int runHeadless(dedloc::SwarmPeer &peer, const HeadlessOptions &options, const std::atomic<bool> &stop);
