#include "BenchProcesses.h"

#include "NetnsLinks.h" // tests/support

#include <cerrno>
#include <chrono>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace dedloc::bench {

namespace {

volatile std::sig_atomic_t g_stopSignal = 0;

void onStopSignal(int signal)
{
    g_stopSignal = signal;
}

} // namespace

void installStopSignals()
{
    struct sigaction action {};
    action.sa_handler = onStopSignal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

int stopSignal()
{
    return g_stopSignal;
}

pid_t spawnIn(const std::string &ns, std::vector<std::string> args)
{
    if (!ns.empty())
        args.insert(args.begin(), {test::NetnsLinks::ipProgram(), "netns", "exec", ns});
    std::vector<char *> argv;
    for (auto &a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    return posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) == 0 ? pid : -1;
}

bool waitForChildren(std::vector<pid_t> children)
{
    bool ok = true, stopped = false;
    while (!children.empty()) {
        if (g_stopSignal != 0 && !stopped) {
            for (const pid_t pid : children)
                ::kill(pid, SIGTERM);
            stopped = true;
        }
        for (auto it = children.begin(); it != children.end();) {
            int status = 0;
            const pid_t r = ::waitpid(*it, &status, WNOHANG);
            if (r == 0 || (r < 0 && errno == EINTR)) {
                ++it;
                continue;
            }
            ok = ok && r == *it && WIFEXITED(status) && WEXITSTATUS(status) == 0;
            it = children.erase(it);
        }
        if (!children.empty())
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return ok && !stopped;
}

std::string selfExecutable()
{
    // The coordinator's own image, which stays reachable here even when a build replaces the file
    // on disk during a long run (read_symlink would name "<path> (deleted)").
    return "/proc/" + std::to_string(::getpid()) + "/exe";
}

} // namespace dedloc::bench
