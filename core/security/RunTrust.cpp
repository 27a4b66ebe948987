#include "security/RunTrust.h"

#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Log.h"

#include <nlohmann/json.hpp>

#include <regex>
#include <vector>

namespace dedloc {

namespace {

constexpr int MaxRotations = 64;

std::string readRunId(const std::filesystem::path &manifest)
{
    nlohmann::json root;
    try {
        root = nlohmann::json::parse(readWholeFile(manifest));
    } catch (const nlohmann::json::exception &e) {
        throw Error("run manifest " + manifest.string() + " is not valid JSON: " + e.what());
    }
    if (!root.is_object() || !root.contains("run_id") || !root["run_id"].is_string())
        throw Error("run manifest " + manifest.string() + " has no string \"run_id\"");
    std::string id = root["run_id"].get<std::string>();
    // Same rule as RunManifest: the id names a file under the trust directory.
    static const std::regex valid("[A-Za-z0-9._-]{1,64}");
    if (!std::regex_match(id, valid) || id == "." || id == "..")
        throw Error("run manifest " + manifest.string() + " has an invalid run_id");
    return id;
}

struct Statement {
    std::filesystem::path pubFile;
    minisign::Signature signature;
};

std::vector<Statement> readStatements(const std::filesystem::path &dir)
{
    std::vector<Statement> out;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        return out;
    for (const auto &entry : std::filesystem::directory_iterator(dir, ec)) {
        const auto &path = entry.path();
        if (path.extension() != ".pub")
            continue;
        const std::filesystem::path sig(path.string() + ".minisig");
        if (!std::filesystem::exists(sig, ec)) {
            log::warning("trust", "rotation statement " + path.string() + " has no signature; ignored");
            continue;
        }
        try {
            out.push_back({path, minisign::parseSignature(readWholeFile(sig), sig.string())});
        } catch (const Error &e) {
            log::warning("trust", std::string("rotation statement ignored: ") + e.what());
        }
    }
    return out;
}

} // namespace

std::filesystem::path writeRotationStatement(const minisign::SecretKey &oldKey, const minisign::PublicKey &newKey,
                                             const std::filesystem::path &runDir)
{
    if (oldKey.keyId == newKey.keyId)
        throw Error("the new lead key has the same key id as the old one; generate a new key pair");
    const auto dir = runDir / "rotations";
    std::filesystem::create_directories(dir);
    auto pub = dir / (newKey.keyIdHex() + ".pub");
    const std::string text = minisign::formatPublicKey(newKey);
    writeFileAtomically(pub, text);
    writeFileAtomically(
        pub.string() + ".minisig",
        minisign::sign(oldKey, text, RotationCommentPrefix + newKey.keyIdHex(),
                       "dedloc lead key rotation " + oldKey.publicKey().keyIdHex() + " -> " + newKey.keyIdHex()));
    return pub;
}

ManifestTrust verifyRunManifest(const std::filesystem::path &manifest, const std::filesystem::path &trustDir,
                                const std::optional<std::filesystem::path> &installedLeadKey)
{
    std::error_code ec;
    if (!std::filesystem::exists(manifest, ec))
        throw Error("run manifest " + manifest.string() + " does not exist");
    const std::filesystem::path sigFile(manifest.string() + ".minisig");
    if (!std::filesystem::exists(sigFile, ec))
        throw Error("run manifest " + manifest.string() + " is not signed (" + sigFile.string() +
                    " is missing); refusing to join a run whose lead cannot be verified");
    const std::string runId = readRunId(manifest);
    const auto runDir = manifest.parent_path();

    ManifestTrust result;
    result.pinFile = trustDir / (runId + ".pub");
    if (std::filesystem::exists(result.pinFile, ec)) {
        result.key = minisign::loadPublicKey(result.pinFile);
        result.anchor = "pinned";
    } else if (installedLeadKey) {
        result.key = minisign::loadPublicKey(*installedLeadKey);
        result.anchor = "installed";
    } else if (std::filesystem::exists(runDir / "lead.pub", ec)) {
        result.key = minisign::loadPublicKey(runDir / "lead.pub");
        result.anchor = "first use";
    } else {
        throw Error("run " + runId + ": no lead public key is known (none pinned in " + result.pinFile.string() +
                    ", none installed, no lead.pub beside the manifest); refusing to join");
    }

    const std::string manifestText = readWholeFile(manifest);
    const std::string sigText = readWholeFile(sigFile);
    const auto signer = minisign::parseSignature(sigText, sigFile.string());

    // Follow rotation statements from the anchor until we reach the manifest's signer.
    const auto statements = readStatements(runDir / "rotations");
    while (signer.keyId != result.key.keyId) {
        if (result.rotations >= MaxRotations)
            throw Error("run " + runId + ": more than " + std::to_string(MaxRotations) + " key rotations; refusing");
        // Every statement that names the current key as its signer is tried: a forged one beside
        // the real one must not block the chain.
        std::optional<minisign::PublicKey> newKey;
        std::string lastError;
        for (const auto &s : statements) {
            if (s.signature.keyId != result.key.keyId)
                continue;
            try {
                const std::string pubText = readWholeFile(s.pubFile);
                const auto verified =
                    minisign::verify(result.key, pubText, readWholeFile(s.pubFile.string() + ".minisig"),
                                     s.pubFile.string() + ".minisig");
                const auto candidate = minisign::parsePublicKey(pubText, s.pubFile.string());
                if (verified.trustedComment != RotationCommentPrefix + candidate.keyIdHex())
                    throw Error(s.pubFile.string() +
                                " is signed but is not a key rotation statement (its trusted comment must be \"" +
                                RotationCommentPrefix + candidate.keyIdHex() + "\")");
                newKey = candidate;
                break;
            } catch (const Error &e) {
                lastError = e.what();
            }
        }
        if (!newKey)
            throw Error("run " + runId + ": the manifest is signed by key " + signer.keyIdHex() +
                        ", but the trusted lead key (" + result.anchor + ") is " + result.key.keyIdHex() +
                        " and no valid rotation statement signed by it leads there" +
                        (lastError.empty() ? std::string() : " (" + lastError + ")") + "; refusing to join");
        log::info("trust",
                  "run " + runId + ": lead key rotated " + result.key.keyIdHex() + " -> " + newKey->keyIdHex());
        result.key = *newKey;
        ++result.rotations;
    }

    try {
        result.trustedComment = minisign::verify(result.key, manifestText, sigText, sigFile.string()).trustedComment;
    } catch (const Error &e) {
        throw Error("run " + runId + " refused: " + e.what());
    }

    const bool pinChanged =
        !std::filesystem::exists(result.pinFile, ec) || minisign::loadPublicKey(result.pinFile) != result.key;
    if (pinChanged) {
        std::filesystem::create_directories(trustDir, ec);
        writeFileAtomically(result.pinFile, minisign::formatPublicKey(result.key));
        log::info("trust",
                  "run " + runId + ": lead key " + result.key.keyIdHex() + " pinned in " + result.pinFile.string());
    }
    return result;
}

} // namespace dedloc
