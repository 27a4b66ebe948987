#include "util/Log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string>

namespace dedloc::log {
namespace {

std::mutex &sinkMutex()
{
    static std::mutex m;
    return m;
}

Sink &currentSink()
{
    static Sink s;
    return s;
}

Level initialLevel()
{
    const char *env = std::getenv("DEDLOC_LOG");
    if (env && std::string_view(env) == "debug")
        return Level::Debug;
    return Level::Info;
}

std::atomic<Level> &minimumLevel()
{
    static std::atomic<Level> level{initialLevel()};
    return level;
}

std::string &stderrTag()
{
    static std::string tag; // guarded by sinkMutex()
    return tag;
}

void writeStderr(Level level, std::string_view category, std::string_view message)
{
    const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    const std::string &tag = stderrTag();
    std::fprintf(stderr, "%s %c %s%s%s%.*s: %.*s\n", stamp, levelName(level)[0], tag.empty() ? "" : "[",
                 tag.c_str(), tag.empty() ? "" : "] ", static_cast<int>(category.size()), category.data(),
                 static_cast<int>(message.size()), message.data());
}

} // namespace

const char *levelName(Level level)
{
    switch (level) {
    case Level::Debug: return "Debug";
    case Level::Info: return "Info";
    case Level::Warning: return "Warning";
    case Level::Error: return "Error";
    }
    return "?";
}

Sink setSink(Sink sink)
{
    std::lock_guard lock(sinkMutex());
    Sink previous = std::move(currentSink());
    currentSink() = std::move(sink);
    return previous;
}

void setStderrTag(std::string tag)
{
    std::lock_guard lock(sinkMutex());
    stderrTag() = std::move(tag);
}

void setMinimumLevel(Level level) { minimumLevel().store(level); }

void write(Level level, std::string_view category, std::string_view message)
{
    if (level < minimumLevel().load())
        return;
    std::lock_guard lock(sinkMutex());
    if (currentSink())
        currentSink()(level, category, message);
    else
        writeStderr(level, category, message);
}

} // namespace dedloc::log
