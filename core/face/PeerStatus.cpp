#include "face/PeerStatus.h"

namespace dedloc {

const char *peerStateName(PeerState state)
{
    switch (state) {
    case PeerState::Idle: return "Idle";
    case PeerState::Connecting: return "Connecting";
    case PeerState::Syncing: return "Syncing";
    case PeerState::Training: return "Training";
    case PeerState::Averaging: return "Averaging";
    case PeerState::Paused: return "Paused";
    case PeerState::Error: return "Error";
    case PeerState::Stopped: return "Stopped";
    }
    return "Unknown";
}

} // namespace dedloc
