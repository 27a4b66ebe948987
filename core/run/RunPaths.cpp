#include "run/RunPaths.h"
#include "run/RunManifest.h"

#include "util/Error.h"

#include <cstdlib>
#include <pwd.h>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace dedloc {

namespace {

constexpr const char *kDefaultRunDir = "default-run";
constexpr const char *kManifestName = "manifest.json";

// Empty and unset mean the same: a shell's `VAR= dedloc` should not point anywhere.
std::optional<std::filesystem::path> envPath(const char *name)
{
    const char *value = std::getenv(name);
    if (value == nullptr || *value == '\0')
        return std::nullopt;
    return std::filesystem::path(value);
}

std::optional<std::filesystem::path> executableDir()
{
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec || exe.empty())
        return std::nullopt;
    return exe.parent_path();
}

bool isFile(const std::filesystem::path &p)
{
    std::error_code ec;
    return std::filesystem::is_regular_file(p, ec);
}

std::filesystem::path homeDir()
{
    if (auto home = envPath("HOME"))
        return *home;
    // Services and some sandboxes run without $HOME; the password database still knows it.
    if (const passwd *pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr)
        return pw->pw_dir;
    throw Error("cannot find the home directory: $HOME is not set (set DEDLOC_DATA_DIR instead)");
}

} // namespace

std::optional<std::filesystem::path> findDefaultManifest()
{
    // An explicit choice wins outright: falling back to the bundled run when the user's directory
    // lacks a manifest would silently train on a different run.
    if (const auto runDir = envPath("DEDLOC_RUN_DIR")) {
        const auto manifest = *runDir / kManifestName;
        return isFile(manifest) ? std::optional(manifest) : std::nullopt;
    }

    std::vector<std::filesystem::path> candidates;
    // Installed layout (<prefix>/bin/dedloc, <prefix>/share/dedloc), then a relocatable bundle
    // (resources/ beside the executable), then the source tree for builds run in place.
    if (const auto exeDir = executableDir()) {
        candidates.push_back(*exeDir / ".." / "share" / "dedloc" / kDefaultRunDir / kManifestName);
        candidates.push_back(*exeDir / "resources" / kDefaultRunDir / kManifestName);
    }
#ifdef DEDLOC_SOURCE_RESOURCES
    candidates.push_back(std::filesystem::path(DEDLOC_SOURCE_RESOURCES) / kDefaultRunDir / kManifestName);
#endif
    for (const auto &candidate : candidates) {
        if (isFile(candidate))
            return candidate.lexically_normal();
    }
    return std::nullopt;
}

std::filesystem::path userDataDir()
{
    std::filesystem::path dir;
    if (auto explicitDir = envPath("DEDLOC_DATA_DIR")) {
        dir = *explicitDir;
    } else if (auto xdg = envPath("XDG_DATA_HOME"); xdg && xdg->is_absolute()) {
        // The XDG spec says relative values are invalid and must be ignored.
        dir = *xdg / "dedloc";
    } else {
        dir = homeDir() / ".local" / "share" / "dedloc";
    }

    std::error_code ec;
    const bool created = std::filesystem::create_directories(dir, ec);
    if (ec)
        throw Error("cannot create the data directory " + dir.string() + ": " + ec.message());
    if (created) {
        // It will hold the peer's private identity key: keep it to the owner.
        std::filesystem::permissions(dir, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace, ec);
    }
    if (!std::filesystem::is_directory(dir, ec))
        throw Error("the data directory " + dir.string() + " is not a directory");
    return dir;
}

std::filesystem::path runDataDir(const std::filesystem::path &dataDir, const std::string &runId)
{
    return dataDir / "runs" / runId;
}

std::filesystem::path soloDataDir(const std::filesystem::path &dataDir, const std::string &runId)
{
    return runDataDir(dataDir, runId) / "solo";
}

std::optional<std::filesystem::path> defaultEvaluationTask(const RunManifest &manifest)
{
    if (!manifest.evaluation.task.empty())
        return manifest.resolve(manifest.evaluation.task);
    std::error_code ec;
    std::optional<std::filesystem::path> only;
    for (const auto &entry : std::filesystem::directory_iterator(manifest.baseDir / "eval", ec)) {
        if (!entry.is_directory(ec))
            continue;
        if (only)
            return std::nullopt; // several tasks: the lead must choose
        only = entry.path();
    }
    return only;
}

} // namespace dedloc
