// Window.h for builds without the window (-DDEDLOC_GUI=OFF): servers, the lead's monitor, CI.
// Nothing here links Qt Widgets; `dedloc` runs headless whatever the display.
#include "Window.h"

#include <cstdio>

bool buildHasWindow() { return false; }

std::unique_ptr<QCoreApplication> makeApplication(bool, int &argc, char **argv)
{
    return std::make_unique<QCoreApplication>(argc, argv);
}

int runWindow(QCoreApplication &, dedloc::SwarmPeer &, const CommandLine &, const dedloc::SwarmOptions &, LocalSwarm *,
              const std::string &, const QString &, const std::atomic<bool> &)
{
    std::fprintf(stderr, "dedloc: this build has no window (built with DEDLOC_GUI=OFF); use --headless\n");
    return 2;
}
