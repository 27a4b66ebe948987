#pragma once
// Fixed inputs the fuzz targets check against and the seed generator (MakeSeeds.cpp) writes valid
// messages for: a lead key made from a fixed seed, a fixed clock, the schema a data-plane
// receiver expects, the model size a state download expects. Deterministic, so a saved input
// fails the same way every time.
#include "net/WireMessage.h"
#include "security/Minisign.h"

#include <cstdint>
#include <string>

namespace dedloc::fuzz {

// "Now" for every time check (2026-12-02, Unix seconds): tokens and records of the seeds are
// valid then, whatever the real clock says.
inline constexpr double Now = 1796169600.0;
inline constexpr const char *RunId = "fuzz-run";
inline constexpr const char *DhtKey = "dedloc/fuzz-run/progress";
inline constexpr const char *GroupsKey = "dedloc/fuzz-run/groups/3";
inline constexpr long UpdateEpoch = 3;
inline constexpr std::uint64_t ModelElements = 1000;
// The content the signature target's inputs are verified against.
inline constexpr const char *SignedContent = "a file a lead signed\n";

// The lead's minisign key pair, from a fixed seed.
[[nodiscard]] const minisign::KeyPair &leadKey();
// What a reducer of group "fuzz-group" expects: 4 members, shards of 1000, parts of 250, fp16.
[[nodiscard]] ShardSchema shardSchema();

} // namespace dedloc::fuzz
