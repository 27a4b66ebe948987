#pragma once
// The options of `dedloc` (see --help), parsed into the core's option structs.
#include "LocalSwarm.h"
#include "peer/SwarmPeer.h"
#include "train/TrainingSession.h"

#include <QString>
#include <QStringList>

#include <filesystem>
#include <optional>

struct CommandLine {
    dedloc::SessionOptions session;  // --solo: the single-peer session of the foundation
    dedloc::SwarmOptions swarm;
    LocalSwarmOptions localSwarm;
    int localSwarmTrainers = 0;      // > 0: --local-swarm N
    bool solo = false;
    bool join = false;               // --join: join at start (no Join button)
    bool inTray = false;             // --in-tray: the window starts hidden in the tray (login)
    bool startPaused = false;        // --start-paused: join paused (the window, or headless)
    double statusInterval = 10.0;    // headless: seconds between status lines
    QString screenshotPath;
    double screenshotAfter = 30.0;
    // Run trust (security/RunTrust.h): the lead key to verify the manifest with (else the
    // installed or pinned one), and the development-only escape hatch.
    std::optional<std::filesystem::path> leadKey;
    bool allowUnsigned = false;
    bool printPeerKey = false;       // --print-peer-key: print the identity's public key and exit

    // Returns -1 to go on, or an exit code (0 after --help/--version, 2 for bad input, with
    // the reason printed).
    int parse(const QStringList &arguments);
};
