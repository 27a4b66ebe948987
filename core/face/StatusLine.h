#pragma once
// One line of text per PeerSnapshot, for headless mode (the same snapshot the window shows, as one
// status line per interval) and for logs. Shows what the window shows:
//   Training | step 12 | batch 40/64 (62%), next in 3 s | swarm 396.1 samples/s, 2 trainers,
//   1 auxiliary, 1 monitor | you 198.0 samples/s, computing 96% of the time, 388 samples (50.0% of
//   swarm) | loss 4.930
// (one line; wrapped here). Paused and Error carry their detail: "Paused (paused by you) | ...",
// "Error: <what to do>". Unknown values are left out (no ETA, no loss yet). Pure; thread-safe.
#include "face/PeerStatus.h"

#include <string>

namespace dedloc {

[[nodiscard]] std::string statusLine(const PeerSnapshot &snapshot);

} // namespace dedloc
