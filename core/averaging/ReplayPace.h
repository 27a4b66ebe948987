#pragma once
// Whether a peer that replays the swarm's averaged updates (averaging/UpdateDownload.h) gains on
// the swarm: each update costs this peer's downlink one compressed average, and the swarm takes
// its steps meanwhile. A peer whose downlink carries an update more slowly than the swarm steps
// never catches up, by replay or by downloading the state (which costs more); it should say so
// rather than stay "syncing" in silence (docs/PROTOCOL.md "Replay instead of a second download").
// Threads: pure functions, thread-safe. Errors: none.
#include <cstddef>
#include <string>

namespace dedloc {

// One replay pass: updates applied, the time and bytes they took, and the epochs this peer was
// behind the swarm (the swarm's epoch less its own) before and after the pass.
struct ReplayPass {
    long updates = 0;
    double seconds = 0.0;
    std::size_t bytes = 0;
    long behindBefore = 0;
    long behindAfter = 0;
};

// "" while the pass gained on the swarm, or was too short to judge (fewer than MinUpdates
// updates); else one line for the volunteer: the pass's updates, time and rate (Mbit/s), and
// that the swarm stepped as often, so this link cannot catch up at the swarm's pace.
inline constexpr long MinUpdatesToJudge = 4;
[[nodiscard]] std::string replayFallsBehind(const ReplayPass &pass);

} // namespace dedloc
