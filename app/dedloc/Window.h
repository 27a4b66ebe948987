#pragma once
// The volunteer window, in builds that have one (CMake option DEDLOC_GUI, on by default).
// Window.cpp implements this with ui/; NoWindow.cpp, for -DDEDLOC_GUI=OFF builds, says that
// this build runs headless only. main.cpp decides at run time which mode to take.
#include "CommandLine.h"

#include <QCoreApplication>
#include <QString>

#include <atomic>
#include <memory>
#include <string>

class LocalSwarm;

// Whether this build can open a window at all.
[[nodiscard]] bool buildHasWindow();

// A QApplication when `window`, else a QCoreApplication (a QApplication cannot replace a
// QCoreApplication later, so this is decided before Qt starts).
[[nodiscard]] std::unique_ptr<QCoreApplication> makeApplication(bool window, int &argc, char **argv);

// Runs the window for `peer` until it quits (or `stop` is set, as Ctrl-C does), serving the
// control socket at `controlPath` (ControlChannel.h: `dedloc ctl`, and a second start that
// raises the window); stops the local swarm's other peers afterwards. Returns the exit code.
int runWindow(QCoreApplication &app, dedloc::SwarmPeer &peer, const CommandLine &cli,
              const dedloc::SwarmOptions &swarm, LocalSwarm *local, const std::string &signatureStatus,
              const QString &controlPath, const std::atomic<bool> &stop);
