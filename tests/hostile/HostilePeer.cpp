// dedloc-hostile-peer: a test-only trainer that lies with its gradients. It takes dedloc's own
// command line (app/dedloc/CommandLine) plus `--attack KIND` anywhere in it:
//   scale:F   sends its true mean gradient times F (F = 1000: scaled; F = -1000: scaled and
//             sign-flipped, an ascent direction)
// Everything else about it is an honest peer: it matchmakes, reduces its shard with the run's
// rule and applies the group's result. Built only into the tests, never into the apps.
#include "CommandLine.h"
#include "peer/SwarmPeer.h"
#include "util/Log.h"

#include <QCoreApplication>

#include <cstdio>
#include <string>

namespace {

// The gradient rewrite for `kind`, or an empty function for a kind this program does not know.
std::function<void(std::span<float>)> attackOf(const std::string &kind)
{
    if (kind.rfind("scale:", 0) != 0)
        return {};
    float factor = 0.0F;
    try {
        factor = std::stof(kind.substr(6));
    } catch (const std::exception &) {
        return {};
    }
    return [factor](std::span<float> gradient) {
        for (float &x : gradient)
            x *= factor;
    };
}

} // namespace

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    QStringList arguments = QCoreApplication::arguments();
    const auto at = arguments.indexOf(QStringLiteral("--attack"));
    if (at < 1 || at + 1 >= arguments.size()) {
        std::fprintf(stderr, "usage: dedloc-hostile-peer --attack scale:F [dedloc options...]\n");
        return 2;
    }
    const auto attack = attackOf(arguments[at + 1].toStdString());
    if (!attack) {
        std::fprintf(stderr, "dedloc-hostile-peer: unknown attack %s\n", qPrintable(arguments[at + 1]));
        return 2;
    }
    arguments.remove(at, 2);
    CommandLine cli;
    if (const int code = cli.parse(arguments); code >= 0)
        return code;
    auto swarm = cli.swarm;
    swarm.tamperGradient = attack;
    dedloc::log::warning("hostile", "this peer sends tampered gradients (" + arguments.join(' ').toStdString() + ")");
    dedloc::SwarmPeer peer(swarm);
    peer.start();
    return peer.wait();
}
