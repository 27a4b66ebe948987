#pragma once
// What `dedloc ctl` and a running `dedloc` say to each other over the local control socket:
// one request line, one answer line, both JSON objects (RFC 8259), each at most
// MaxControlLineBytes. Pure logic: no socket, no clock; the transport is app/dedloc's
// ControlChannel, the actions are the running app's (window or headless).
//
// Requests: {"command": "status"}, {"command": "pause"} (until resumed),
// {"command": "pause", "seconds": 3600}, {"command": "resume"}, {"command": "quit"},
// {"command": "raise"} (show the window; what a second start of the app sends).
// Answers: {"ok": true, ...} with "status" for the status request, or
// {"ok": false, "error": "what was wrong"}.
//
// Errors: malformed input never throws; parseControlRequest says what is wrong in `error`.
// Threads: free functions, no shared state.
#include "face/PeerStatus.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace dedloc {

inline constexpr std::size_t MaxControlLineBytes = 64 * 1024;
// The longest pause a request may ask for: a year (longer is "until resumed": a plain pause).
inline constexpr double MaxControlPauseSeconds = 366.0 * 86400.0;

enum class ControlCommand { Status, Pause, Resume, Quit, Raise };

[[nodiscard]] const char *controlCommandName(ControlCommand command); // "status", "pause", ...

struct ControlRequest {
    ControlCommand command = ControlCommand::Status;
    double pauseSeconds = 0.0; // Pause: > 0 for a timed pause, 0 until resumed
};

struct ParsedControlRequest {
    std::optional<ControlRequest> request;
    std::string error; // why there is no request
};

// One request line (without its newline). Unknown commands, unknown keys, a "seconds" that is not
// a number in (0, MaxControlPauseSeconds] or given to another command than pause are refused.
[[nodiscard]] ParsedControlRequest parseControlRequest(const std::string &line);
[[nodiscard]] std::string controlRequestLine(const ControlRequest &request); // no newline

// "90" or "90s", "15m", "2h", "1h30m", "1d": seconds, or nullopt when the text is not a positive
// duration up to MaxControlPauseSeconds (units s, m, h, d; each unit at most once, largest first;
// a number without a unit only alone).
[[nodiscard]] std::optional<double> parseControlDuration(const std::string &text);

// How the running app is paused, for the status answer (the window's pause decision, or the
// headless app's own pause).
struct ControlPauseState {
    bool paused = false;
    std::string cause;       // "manual", "timed", "automatic" ("" when not paused)
    std::string reason;      // "paused by you", "on battery power", ...
    double resumesAt = -1.0; // timed: unix seconds; otherwise < 0
};

// The status answer's "status" object: the snapshot's state, step, batch, swarm and own
// contribution, what the swarm's monitor recorded of it ("monitor", null before one answers), the
// pause, and `statusLine` (face/StatusLine.h) for people. Keys are stable for
// scripts (docs/USER_GUIDE.md "Control from a terminal").
[[nodiscard]] nlohmann::json controlStatus(const PeerSnapshot &snapshot, const ControlPauseState &pause, bool window);

[[nodiscard]] nlohmann::json controlOk();
[[nodiscard]] nlohmann::json controlError(const std::string &error);

} // namespace dedloc
