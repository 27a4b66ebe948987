// dedloc-hostile-peer: a test-only trainer that lies with its gradients or its progress. It
// takes dedloc's own command line (app/dedloc/CommandLine) plus `--attack KIND` anywhere in it:
//   scale:F   sends its true mean gradient times F (F = 1000: scaled; F = -1000: scaled and
//             sign-flipped, an ascent direction)
//   claim:N   its progress record claims N samples at every epoch, at 1e6 samples/s (N = twice
//             the target batch: the most a record may claim, the whole batch at once); its own
//             tracker believes it too, so it asks for every step at once
//   ahead:K   its progress record claims the epoch K above its own (two such peers, at K = 1 and
//             K = 2, corroborate each other's claims: colluders climbing by turns)
//   bandwidth:B  declares B Mbit/s whenever it joins or leads a group, whatever it measured (a
//             peer after the largest shard, whose result it alone decides)
//   result:F  as a reducer, returns (and applies) its shard's true gradient average times F (a
//             reducer lying about its result; its sketches of the round stay true)
//   silentresult:F  as result:F, and publishes no check record (its view hidden from the check)
//   nan       every PART it sends carries NaN: the bytes of a float NaN over the whole payload,
//             after encoding (no honest encoder makes one; its own local gradient stays finite)
//   weight:W  every PART it sends claims W samples, whatever it computed (its records stay true)
//   neverbegin  asks no leader; as a leader, accepts joins and never sends BEGIN (it holds its
//             followers); its declarations name a deadline 2 s away, so that it is asked first
//   donor:V   as a state donor, serves every value as V (finite garbage) while its records and
//             offers name its true state and digest
// Everything else about it is an honest peer: it matchmakes, reduces its shard with the run's
// rule and applies the group's result. Built only into the tests, never into the apps.
#include "CommandLine.h"
#include "peer/SwarmPeer.h"
#include "util/Log.h"

#include <QCoreApplication>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>

namespace {

// The number after `prefix` in `kind` ("scale:-1000"), or nothing.
std::optional<double> parameterOf(const std::string &kind, const std::string &prefix)
{
    if (kind.rfind(prefix, 0) != 0)
        return std::nullopt;
    try {
        return std::stod(kind.substr(prefix.size()));
    } catch (const std::exception &) {
        return std::nullopt;
    }
}

// Sets the rewrite that `kind` asks for on `swarm`; false for a kind this program does not know.
bool setAttack(const std::string &kind, dedloc::SwarmOptions &swarm)
{
    if (const auto factor = parameterOf(kind, "scale:")) {
        swarm.tamperGradient = [f = static_cast<float>(*factor)](std::span<float> gradient) {
            for (float &x : gradient)
                x *= f;
        };
        return true;
    }
    if (const auto samples = parameterOf(kind, "claim:"); samples && *samples >= 0) {
        swarm.tamperRecord = [n = static_cast<long>(*samples)](dedloc::ProgressRecord &r) {
            r.samplesAccumulated = n;
            r.samplesPerSecond = 1e6;
        };
        return true;
    }
    if (const auto mbit = parameterOf(kind, "bandwidth:"); mbit && *mbit > 0) {
        swarm.tamperBandwidth = [b = *mbit](double) { return b; };
        return true;
    }
    if (const auto factor = parameterOf(kind, "silentresult:")) {
        swarm.tamperAverage = [f = static_cast<float>(*factor)](std::span<float> average) {
            for (float &x : average)
                x *= f;
        };
        swarm.withholdChecks = true;
        return true;
    }
    if (const auto factor = parameterOf(kind, "result:")) {
        swarm.tamperAverage = [f = static_cast<float>(*factor)](std::span<float> average) {
            for (float &x : average)
                x *= f;
        };
        return true;
    }
    if (kind == "neverbegin") {
        swarm.matchmaking.neverBegin = true;
        // Declared 2 s from now, it orders before every peer with that window that declares at
        // most 2 s before it; its accepts name its true deadline (within the followers' window,
        // so that the hold breaks the deadline it named: a longer one is left without blame).
        swarm.matchmaking.declareEarlyBy = std::max(0.0, swarm.matchmaking.window - 2.0);
        return true;
    }
    if (kind == "nan") {
        swarm.tamperPart = [](double &, std::span<std::uint8_t> payload) {
            constexpr std::uint8_t Nan[4] = {0x00, 0x00, 0xC0, 0x7F}; // quiet NaN, little endian
            for (std::size_t i = 0; i < payload.size(); ++i)
                payload[i] = Nan[i % 4];
        };
        return true;
    }
    if (const auto claimed = parameterOf(kind, "weight:"); claimed && *claimed >= 0) {
        swarm.tamperPart = [w = *claimed](double &weight, std::span<std::uint8_t>) { weight = w; };
        return true;
    }
    if (const auto value = parameterOf(kind, "donor:")) {
        swarm.tamperServedState = [v = static_cast<float>(*value)](std::span<float> part) {
            std::fill(part.begin(), part.end(), v);
        };
        return true;
    }
    if (const auto lead = parameterOf(kind, "ahead:"); lead && *lead >= 1) {
        swarm.tamperRecord = [k = static_cast<long>(*lead)](dedloc::ProgressRecord &r) { r.epoch += k; };
        return true;
    }
    return false;
}

} // namespace

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    QStringList arguments = QCoreApplication::arguments();
    const auto at = arguments.indexOf(QStringLiteral("--attack"));
    if (at < 1 || at + 1 >= arguments.size()) {
        std::fprintf(stderr, "usage: dedloc-hostile-peer --attack scale:F|claim:N|ahead:K|bandwidth:B|result:F|"
                             "silentresult:F|nan|weight:W|donor:V|neverbegin [dedloc options...]\n");
        return 2;
    }
    const auto attack = arguments[at + 1].toStdString();
    arguments.remove(at, 2);
    CommandLine cli;
    if (const int code = cli.parse(arguments); code >= 0)
        return code;
    auto swarm = cli.swarm;
    if (!setAttack(attack, swarm)) {
        std::fprintf(stderr, "dedloc-hostile-peer: unknown attack %s\n", attack.c_str());
        return 2;
    }
    dedloc::log::warning("hostile", "this peer attacks with " + attack + " (" + arguments.join(' ').toStdString() + ")");
    dedloc::SwarmPeer peer(swarm);
    peer.start();
    return peer.wait();
}
