#include "face/ControlProtocol.h"

#include "face/StatusLine.h"

#include <cctype>
#include <cmath>

namespace dedloc {
namespace {

std::optional<ControlCommand> commandNamed(const std::string &name)
{
    for (auto c : {ControlCommand::Status, ControlCommand::Pause, ControlCommand::Resume, ControlCommand::Quit,
                   ControlCommand::Raise})
        if (name == controlCommandName(c))
            return c;
    return std::nullopt;
}

ParsedControlRequest refused(std::string why) { return {std::nullopt, std::move(why)}; }

} // namespace

const char *controlCommandName(ControlCommand command)
{
    switch (command) {
    case ControlCommand::Status: return "status";
    case ControlCommand::Pause: return "pause";
    case ControlCommand::Resume: return "resume";
    case ControlCommand::Quit: return "quit";
    case ControlCommand::Raise: return "raise";
    }
    return "?";
}

ParsedControlRequest parseControlRequest(const std::string &line)
{
    if (line.size() > MaxControlLineBytes)
        return refused("request longer than " + std::to_string(MaxControlLineBytes) + " bytes");
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return refused("a request is one JSON object, e.g. {\"command\": \"status\"}");
    const auto name = j.find("command");
    if (name == j.end() || !name->is_string())
        return refused("the request names no \"command\"");
    const auto command = commandNamed(name->get<std::string>());
    if (!command)
        return refused("unknown command \"" + name->get<std::string>() + "\" (status, pause, resume, quit, raise)");
    ControlRequest request{*command, 0.0};
    for (const auto &[key, value] : j.items()) {
        if (key == "command")
            continue;
        if (key != "seconds" || *command != ControlCommand::Pause)
            return refused("unexpected key \"" + key + "\" for " + controlCommandName(*command));
        if (!value.is_number())
            return refused("\"seconds\" must be a number");
        const double seconds = value.get<double>();
        if (!std::isfinite(seconds) || seconds <= 0.0 || seconds > MaxControlPauseSeconds)
            return refused("\"seconds\" must be in (0, " + std::to_string(static_cast<long>(MaxControlPauseSeconds)) + "]");
        request.pauseSeconds = seconds;
    }
    return {request, {}};
}

std::string controlRequestLine(const ControlRequest &request)
{
    nlohmann::json j{{"command", controlCommandName(request.command)}};
    if (request.command == ControlCommand::Pause && request.pauseSeconds > 0.0)
        j["seconds"] = request.pauseSeconds;
    return j.dump();
}

std::optional<double> parseControlDuration(const std::string &text)
{
    if (text.empty() || text.size() > 32)
        return std::nullopt;
    static constexpr struct {
        char unit;
        double seconds;
    } units[] = {{'d', 86400.0}, {'h', 3600.0}, {'m', 60.0}, {'s', 1.0}};
    double total = 0.0;
    std::size_t i = 0, nextUnit = 0;
    while (i < text.size()) {
        std::size_t digits = i;
        while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])))
            ++digits;
        if (digits == i || digits - i > 9)
            return std::nullopt;
        const double value = std::stod(text.substr(i, digits - i));
        if (digits == text.size()) { // a bare number is seconds, and only alone ("1h30" is ambiguous)
            if (i != 0)
                return std::nullopt;
            total = value;
            break;
        }
        std::size_t u = nextUnit;
        while (u < 4 && units[u].unit != text[digits])
            ++u;
        if (u == 4)
            return std::nullopt; // an unknown unit, or one out of order or repeated
        total += value * units[u].seconds;
        nextUnit = u + 1;
        i = digits + 1;
    }
    if (total <= 0.0 || total > MaxControlPauseSeconds)
        return std::nullopt;
    return total;
}

nlohmann::json controlStatus(const PeerSnapshot &s, const ControlPauseState &pause, bool window)
{
    nlohmann::json pauseJson{{"paused", pause.paused}};
    if (pause.paused) {
        pauseJson["cause"] = pause.cause;
        pauseJson["reason"] = pause.reason;
        if (pause.resumesAt >= 0.0)
            pauseJson["resumes_at"] = pause.resumesAt;
    }
    return {
        {"state", peerStateName(s.state)},
        {"detail", s.stateDetail},
        {"role", peerRoleName(s.role)},
        {"window", window},
        {"run_id", s.runId},
        {"peer_id", s.peerId},
        {"step", s.globalEpoch},
        {"batch", {{"samples", static_cast<long long>(s.swarmSamplesAccumulated)}, {"target", s.targetBatchSize}}},
        {"swarm",
         {{"samples_per_second", s.swarmSamplesPerSecond},
          {"trainers", s.trainers},
          {"auxiliaries", s.auxiliaries},
          {"monitors", s.monitors}}},
        {"you",
         {{"samples_per_second", s.localSamplesPerSecond},
          {"samples", s.session.samples},
          {"samples_all_time", s.allTime.samples},
          {"share_of_swarm", s.shareOfSwarm}}},
        {"loss", s.lastLoss >= 0.0 ? nlohmann::json(s.lastLoss) : nlohmann::json(nullptr)},
        {"monitor",
         s.monitorCredit.monitorId.empty()
             ? nlohmann::json(nullptr)
             : nlohmann::json{{"monitor_id", s.monitorCredit.monitorId},
                              {"samples", s.monitorCredit.samples},
                              {"steps", s.monitorCredit.steps},
                              {"through_step", s.monitorCredit.throughStep()},
                              {"own_samples_in_those_steps", s.ownCredit.samplesInRecordedSteps},
                              {"steps_missed", s.ownCredit.stepsMissed}}},
        {"pause", pauseJson},
        {"status_line", statusLine(s)},
    };
}

nlohmann::json controlOk() { return {{"ok", true}}; }

nlohmann::json controlError(const std::string &error) { return {{"ok", false}, {"error", error}}; }

} // namespace dedloc
