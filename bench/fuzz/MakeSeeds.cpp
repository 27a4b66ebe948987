// Writes the seed corpus of every fuzz target: valid messages and files made with the project's
// own encoders and the fixtures of FuzzFixtures.h.
// Usage: fuzz_seeds OUTPUT_DIR DEFAULT_RUN_DIR   (bench/fuzz/corpus, resources/default-run)
#include "FuzzFixtures.h"
#include "MakeSeeds.h"

#include "run/RunManifest.h"
#include "security/AccessToken.h"
#include "util/AtomicFile.h"
#include "util/Hash.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <iostream>

namespace dedloc::fuzz {

Seed seedOf(const std::string &target, const std::string &name, const std::string &bytes)
{
    return {target, name, {bytes.begin(), bytes.end()}};
}

Seed seedOf(const std::string &target, const std::string &name, const std::vector<std::uint8_t> &bytes)
{
    return {target, name, {bytes.begin(), bytes.end()}};
}

namespace {

// Magic, header length, header, one 2x3 tensor; the target appends the trailer.
std::string checkpointWithoutTrailer()
{
    const std::string header = R"({"meta":{"run_id":"fuzz-run","step":3},"tensors":[)"
                               R"({"bytes":24,"name":"param.w","offset":0,"shape":[2,3]},)"
                               R"({"bytes":4,"name":"optim.s","offset":24,"shape":[]}]})";
    std::string out = "DDLCKPT1";
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
    out += header;
    const float values[7] = {1, 2, 3, 4, 5, 6, 7};
    out.append(reinterpret_cast<const char *>(values), sizeof values);
    return out;
}

std::vector<Seed> securitySeeds()
{
    const auto &lead = leadKey();
    Ed25519PublicKey peer{};
    peer.fill(7);
    const auto now = static_cast<std::int64_t>(Now);
    const auto token = issueAccessToken(lead.secretKey, RunId, peer, "volunteer", now - 60, now + 86400);
    const std::string trusted = "timestamp:1796169600\tfile:manifest.json\thashed";
    return {seedOf("AccessToken", "valid.txt", token),
            seedOf("MinisignKey", "lead.pub", minisign::formatPublicKey(lead.publicKey)),
            seedOf("MinisignKey", "lead.key", minisign::formatSecretKey(lead.secretKey, std::nullopt)),
            seedOf("MinisignKey", "lead-encrypted.key",
                   minisign::formatSecretKey(lead.secretKey, std::string("pw"), minisign::KdfCost::interactive())),
            seedOf("MinisignSignature", "valid.minisig", minisign::sign(lead.secretKey, SignedContent, trusted))};
}

} // namespace

std::vector<Seed> fileSeeds(const std::filesystem::path &defaultRun)
{
    const auto manifestText = readWholeFile(defaultRun / "manifest.json");
    const auto manifest = parseRunManifest(manifestText, defaultRun);
    auto seeds = securitySeeds();
    seeds.push_back(seedOf("RunManifest", "default-run.json", manifestText));
    seeds.push_back(seedOf("RunManifest", "canonical.json", toJson(manifest)));
    seeds.push_back(seedOf("MinisignKey", "default-run-lead.pub", readWholeFile(defaultRun / "lead.pub")));
    seeds.push_back(seedOf("MinisignSignature", "default-run.minisig", readWholeFile(defaultRun / "manifest.json.minisig")));
    seeds.push_back(seedOf("Checkpoint", "two-tensors.ddlc", checkpointWithoutTrailer()));
    return seeds;
}

} // namespace dedloc::fuzz

int main(int argc, char **argv)
{
    using namespace dedloc::fuzz;
    if (argc != 3) {
        std::cerr << "usage: fuzz_seeds OUTPUT_DIR DEFAULT_RUN_DIR\n";
        return 2;
    }
    auto seeds = swarmSeeds();
    for (auto &s : fileSeeds(argv[2]))
        seeds.push_back(std::move(s));
    for (const auto &s : seeds) {
        const auto dir = std::filesystem::path(argv[1]) / s.target;
        std::filesystem::create_directories(dir);
        std::ofstream(dir / s.name, std::ios::binary).write(reinterpret_cast<const char *>(s.bytes.data()),
                                                              static_cast<std::streamsize>(s.bytes.size()));
    }
    std::cout << "fuzz_seeds: wrote " << seeds.size() << " seeds under " << argv[1] << "\n";
    return 0;
}
