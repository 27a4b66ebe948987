#pragma once
// The roles a peer takes in a run (docs/PROTOCOL.md "Roles"). Published in every progress
// record ("o"), so every peer knows who computes, who only averages and who records.
// Header-only: the front ends show the role without linking the protocol.
namespace dedloc {

enum class PeerRole {
    Trainer,    // computes gradients and averages them
    Auxiliary,  // reachable, CPU only: reduces shards with weight 0, trains nothing
    Monitor,    // trains nothing: records metrics, keeps the latest state, donor and bootstrap node
};

// "trainer", "auxiliary", "monitor": the spelling in progress records, metrics and logs.
[[nodiscard]] constexpr const char *peerRoleName(PeerRole role)
{
    switch (role) {
    case PeerRole::Trainer: return "trainer";
    case PeerRole::Auxiliary: return "auxiliary";
    case PeerRole::Monitor: return "monitor";
    }
    return "unknown";
}

} // namespace dedloc
