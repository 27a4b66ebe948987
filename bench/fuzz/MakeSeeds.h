#pragma once
// The seed generator's parts (MakeSeeds.cpp, MakeSeedsSwarm.cpp): valid messages of each
// target's format, written as files of bench/fuzz/corpus/<target>/.
#include <filesystem>
#include <string>
#include <vector>

namespace dedloc::fuzz {

struct Seed {
    std::string target; // the directory: the target's name without "fuzz"
    std::string name;   // the file name
    std::vector<unsigned char> bytes;
};

[[nodiscard]] Seed seedOf(const std::string &target, const std::string &name, const std::string &bytes);
[[nodiscard]] Seed seedOf(const std::string &target, const std::string &name, const std::vector<std::uint8_t> &bytes);

// Shard headers, service messages, updates, DHT payloads and records.
[[nodiscard]] std::vector<Seed> swarmSeeds();
// Manifests (the bundled run's, read from `defaultRun`), tokens, minisign files, a checkpoint.
[[nodiscard]] std::vector<Seed> fileSeeds(const std::filesystem::path &defaultRun);

} // namespace dedloc::fuzz
