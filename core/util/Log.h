#pragma once
// One logging facade for the whole program. Messages carry a level and a category
// ("train", "data", "ckpt", "system", ...). The default sink writes
// "2026-11-29T20:00:00Z W train: message" to stderr; the GUI installs its own sink later.
// Thread-safe: any thread may log; the sink is called under a mutex.
#include <functional>
#include <string>
#include <string_view>

namespace dedloc::log {

enum class Level { Debug, Info, Warning, Error };

using Sink = std::function<void(Level, std::string_view category, std::string_view message)>;

// Replaces the sink (nullptr restores stderr). Returns the previous one.
Sink setSink(Sink sink);
// A tag the stderr sink prints in brackets before the category ("[trainer-2] match: ..."), so
// that the interleaved output of several processes (a local swarm) says which peer wrote each
// line. Empty (default): none.
void setStderrTag(std::string tag);
// Messages below this level are dropped (default Info; DEDLOC_LOG=debug lowers it).
void setMinimumLevel(Level level);

void write(Level level, std::string_view category, std::string_view message);

inline void debug(std::string_view c, std::string_view m) { write(Level::Debug, c, m); }
inline void info(std::string_view c, std::string_view m) { write(Level::Info, c, m); }
inline void warning(std::string_view c, std::string_view m) { write(Level::Warning, c, m); }
inline void error(std::string_view c, std::string_view m) { write(Level::Error, c, m); }

[[nodiscard]] const char *levelName(Level level);

} // namespace dedloc::log
