#include "face/StatusLine.h"

#include <cmath>
#include <cstdio>

namespace dedloc {
namespace {

std::string fixed(double v, int digits)
{
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", digits, v);
    return text;
}

std::string duration(double seconds)
{
    const auto s = static_cast<long long>(std::llround(seconds));
    if (s < 60)
        return std::to_string(s) + " s";
    if (s < 3600)
        return std::to_string(s / 60) + " min";
    return std::to_string(s / 3600) + " h " + std::to_string(s / 60 % 60) + " min";
}

std::string plural(int n, const char *one, const char *many)
{
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

} // namespace

std::string statusLine(const PeerSnapshot &s)
{
    std::string line = peerStateName(s.state);
    if (!s.stateDetail.empty())
        line += s.state == PeerState::Error ? ": " + s.stateDetail : " (" + s.stateDetail + ")";
    if (s.state == PeerState::Idle || s.state == PeerState::Error || s.state == PeerState::Stopped)
        return line;
    line += " | step " + std::to_string(s.globalEpoch);
    if (s.targetBatchSize > 0) {
        const auto have = static_cast<long long>(s.swarmSamplesAccumulated);
        line += " | batch " + std::to_string(have) + "/" + std::to_string(s.targetBatchSize);
        if (have >= s.targetBatchSize) {
            line += " (target reached)"; // the peers are agreeing on the step: no time to wait
        } else {
            line += " (" + fixed(100.0 * s.swarmSamplesAccumulated / double(s.targetBatchSize), 0) + "%)";
            if (s.etaSeconds >= 0.0 && std::isfinite(s.etaSeconds))
                line += ", next in " + duration(s.etaSeconds);
        }
    }
    line += " | swarm " + fixed(s.swarmSamplesPerSecond, 1) + " samples/s, " +
            plural(s.trainers, "trainer", "trainers") + ", " + std::to_string(s.auxiliaries) + " auxiliary, " +
            plural(s.monitors, "monitor", "monitors");
    if (s.otherVersionPeers > 0)
        line += " (" + plural(s.otherVersionPeers, "peer", "peers") + " on another manifest version)";
    // A monitor or auxiliary computes no samples: its own figures would only say 0.
    if (s.role == PeerRole::Trainer) {
        line += " | you " + fixed(s.localSamplesPerSecond, 1) + " samples/s, ";
        if (s.computeUtilisation >= 0.0)
            line += "computing " + fixed(100.0 * s.computeUtilisation, 0) + "% of the time, ";
        line += std::to_string(s.session.samples) + " samples (" + fixed(100.0 * s.shareOfSwarm, 1) + "% of swarm)";
    }
    if (s.lastLoss >= 0.0)
        line += " | loss " + fixed(s.lastLoss, 3);
    if (s.reachability.rfind("client mode", 0) == 0)
        line += " | client mode";
    return line;
}

} // namespace dedloc
