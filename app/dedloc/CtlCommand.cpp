#include "CtlCommand.h"

#include "ControlChannel.h"
#include "run/RunPaths.h"

#include <cstdio>

namespace {

constexpr int AnswerTimeoutMs = 10000;

int usage(const char *why)
{
    if (why)
        std::fprintf(stderr, "dedloc ctl: %s\n", why);
    std::fprintf(why ? stderr : stdout,
                 "usage: dedloc ctl status [--json] | pause [--for DURATION] | resume | quit | raise [--data-dir DIR]\n"
                 "  DURATION: 90s, 15m, 2h, 1h30m, 1d (a plain pause lasts until resume)\n");
    return why ? 2 : 0;
}

void printStatus(const nlohmann::json &status)
{
    std::printf("%s\n", status.value("status_line", std::string()).c_str());
    const auto &pause = status.at("pause");
    if (pause.value("paused", false))
        std::printf("paused (%s): %s\n", pause.value("cause", std::string()).c_str(),
                    pause.value("reason", std::string()).c_str());
}

} // namespace

int runCtl(const QStringList &arguments)
{
    if (arguments.isEmpty())
        return usage("which command?");
    if (arguments.front() == QLatin1String("--help") || arguments.front() == QLatin1String("-h"))
        return usage(nullptr);
    dedloc::ControlRequest request;
    const QString word = arguments.front();
    if (word == QLatin1String("status"))
        request.command = dedloc::ControlCommand::Status;
    else if (word == QLatin1String("pause"))
        request.command = dedloc::ControlCommand::Pause;
    else if (word == QLatin1String("resume"))
        request.command = dedloc::ControlCommand::Resume;
    else if (word == QLatin1String("quit"))
        request.command = dedloc::ControlCommand::Quit;
    else if (word == QLatin1String("raise"))
        request.command = dedloc::ControlCommand::Raise;
    else
        return usage("unknown command (status, pause, resume, quit, raise)");

    bool json = false;
    QString dataDir = QString::fromStdString(dedloc::userDataDir().string());
    for (int i = 1; i < arguments.size(); ++i) {
        const QString &a = arguments[i];
        const bool hasValue = i + 1 < arguments.size();
        if (a == QLatin1String("--json") && request.command == dedloc::ControlCommand::Status) {
            json = true;
        } else if (a == QLatin1String("--data-dir") && hasValue) {
            dataDir = arguments[++i];
        } else if (a == QLatin1String("--for") && hasValue && request.command == dedloc::ControlCommand::Pause) {
            const auto seconds = dedloc::parseControlDuration(arguments[++i].toStdString());
            if (!seconds)
                return usage("--for takes a duration such as 90s, 15m, 2h, 1h30m or 1d (at most 366d)");
            request.pauseSeconds = *seconds;
        } else {
            return usage(qPrintable(QStringLiteral("unexpected argument %1").arg(a)));
        }
    }

    QString error;
    const auto reply = sendControlRequest(controlSocketPath(dataDir), request, AnswerTimeoutMs, &error);
    if (!reply) {
        std::fprintf(stderr, "dedloc ctl: %s\n", qPrintable(error));
        return 1;
    }
    if (!reply->value("ok", false)) {
        std::fprintf(stderr, "dedloc ctl: the app refused: %s\n", reply->value("error", std::string("no reason")).c_str());
        return 1;
    }
    if (request.command == dedloc::ControlCommand::Status && reply->contains("status")) {
        if (json)
            std::printf("%s\n", reply->at("status").dump().c_str());
        else
            printStatus(reply->at("status"));
    }
    return 0;
}
