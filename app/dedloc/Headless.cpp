#include "Headless.h"

#include "ControlChannel.h"
#include "face/StatusLine.h"
#include "util/Log.h"

#include <QCoreApplication>
#include <QThread>

#include <chrono>
#include <cstdio>
#include <memory>

namespace {

using Clock = std::chrono::steady_clock;

// "90 s", "15 min", "2 h", "1 h 30 min", "3 d"
std::string durationText(double seconds)
{
    const long s = long(seconds + 0.5);
    if (s < 120)
        return std::to_string(s) + " s";
    if (s < 3 * 3600)
        return s % 3600 == 0 ? std::to_string(s / 3600) + " h"
               : s >= 3600  ? std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min"
                            : std::to_string(s / 60) + " min";
    if (s < 3 * 86400)
        return std::to_string((s + 1800) / 3600) + " h";
    return std::to_string((s + 43200) / 86400) + " d";
}

double unixNow()
{
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The pause `dedloc ctl` (or --start-paused) asked for; a headless peer has no auto-pause.
struct HeadlessPause {
    bool paused = false;
    double until = -1.0; // unix seconds; < 0: until resumed

    dedloc::ControlPauseState state(const std::string &reason) const
    {
        if (!paused)
            return {};
        return {true, until >= 0.0 ? "timed" : "manual", reason, until};
    }
};

struct HeadlessControl {
    dedloc::SwarmPeer &peer;
    HeadlessPause pause;
    bool quit = false;

    void pauseNow(double seconds)
    {
        pause = {true, seconds > 0.0 ? unixNow() + seconds : -1.0};
        const std::string reason = seconds > 0.0 ? "paused from the command line for " + durationText(seconds)
                                                 : "paused from the command line";
        dedloc::log::info("app", reason);
        peer.pause(reason);
    }
    void resumeNow()
    {
        if (pause.paused)
            dedloc::log::info("app", "resuming");
        pause = {};
        peer.resume();
    }
    nlohmann::json handle(const dedloc::ControlRequest &r)
    {
        switch (r.command) {
        case dedloc::ControlCommand::Status: {
            const auto snapshot = peer.snapshot();
            auto reply = dedloc::controlOk();
            reply["status"] = dedloc::controlStatus(snapshot, pause.state(snapshot.stateDetail), false);
            return reply;
        }
        case dedloc::ControlCommand::Pause:
            pauseNow(r.pauseSeconds);
            return dedloc::controlOk();
        case dedloc::ControlCommand::Resume:
            resumeNow();
            return dedloc::controlOk();
        case dedloc::ControlCommand::Quit:
            dedloc::log::info("app", "quit from the command line");
            quit = true;
            return dedloc::controlOk();
        case dedloc::ControlCommand::Raise:
            return dedloc::controlError("this dedloc runs without a window");
        }
        return dedloc::controlError("unknown command");
    }
};

} // namespace

int runHeadless(dedloc::SwarmPeer &peer, const HeadlessOptions &options, const std::atomic<bool> &stop)
{
    const std::string prefix = options.name.empty() ? std::string() : "[" + options.name + "] ";
    HeadlessControl control{peer, {}, false};
    std::unique_ptr<ControlServer> server;
    if (!options.controlPath.isEmpty()) {
        server = std::make_unique<ControlServer>([&control](const dedloc::ControlRequest &r) { return control.handle(r); });
        QString error;
        if (!server->listen(options.controlPath, &error)) {
            std::fprintf(stderr, "dedloc: %s\n", qPrintable(error));
            return 1;
        }
    }
    peer.start();
    if (options.startPaused)
        control.pauseNow(0.0);
    auto lastStatus = Clock::now();
    while (!stop.load() && !control.quit) {
        const auto snapshot = peer.snapshot();
        if (snapshot.state == dedloc::PeerState::Stopped || snapshot.state == dedloc::PeerState::Error)
            break;
        if (control.pause.paused && control.pause.until >= 0.0 && unixNow() >= control.pause.until)
            control.resumeNow(); // a timed pause ended
        if (options.statusInterval > 0 && Clock::now() - lastStatus >= std::chrono::duration<double>(options.statusInterval)) {
            std::printf("%s%s\n", prefix.c_str(), dedloc::statusLine(snapshot).c_str());
            std::fflush(stdout);
            lastStatus = Clock::now();
        }
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
        QThread::msleep(50);
    }
    server.reset(); // no answers while stopping
    peer.stop();
    return peer.wait();
}
