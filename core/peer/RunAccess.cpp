#include "peer/RunAccess.h"

#include "run/RunPaths.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"
#include "util/Clock.h"

#include <chrono>
#include <fstream>
#include <sstream>

namespace dedloc {

namespace {

std::string trimmed(const std::string &s)
{
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string::npos)
        return {};
    return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}


} // namespace

std::filesystem::path defaultAccessTokenPath(const std::filesystem::path &dataDir, const std::string &runId)
{
    return runDataDir(dataDir, runId) / "access.token";
}

RunAccess setUpRunAccess(const RunManifest &manifest, const PeerIdentity &identity,
                         const std::optional<minisign::PublicKey> &leadKey, const std::filesystem::path &dataDir,
                         std::filesystem::path tokenFile, bool checkOwnToken)
{
    AccessPolicy policy;
    policy.closed = manifest.closed;
    RunAccess access;
    if (!manifest.closed) {
        access.security = std::make_shared<DataPlaneSecurity>(identity, policy);
        return access;
    }
    const std::string peerKey = toHex(identity.publicKey().data(), identity.publicKey().size());
    if (!leadKey)
        throw Error("this run is closed: its lead key is unknown (the manifest was not verified), so access tokens "
                    "cannot be checked; join without --allow-unsigned");
    policy.lead = *leadKey;
    policy.runId = manifest.runId;
    access.security = std::make_shared<DataPlaneSecurity>(identity, policy);

    if (tokenFile.empty())
        tokenFile = defaultAccessTokenPath(dataDir, manifest.runId);
    std::error_code ec;
    if (std::filesystem::exists(tokenFile, ec)) {
        std::ifstream in(tokenFile);
        std::stringstream text;
        text << in.rdbuf();
        if (!in)
            throw Error("this run is closed: your access token file " + tokenFile.string() + " cannot be read");
        access.ownToken = trimmed(text.str());
    }
    const std::string howTo = "; send your peer key " + peerKey +
                              " (dedloc --print-peer-key) to the run's lead and "
                              "save the token you get in " +
                              tokenFile.string() + " (or pass --token FILE)";
    std::string problem;
    if (access.ownToken.empty()) {
        problem = "your access token is missing (no token in " + tokenFile.string() + ")";
    } else {
        try {
            const auto token = verifyAccessToken(access.ownToken, policy.lead, policy.runId, unixSeconds());
            checkTokenBinding(token, identity.publicKey());
            access.ownTokenExpiresAt = token.expiresAt;
            log::info("access", "closed run: access token for " + token.name + " is valid for another "
                                    + std::to_string((token.expiresAt - unixSeconds()) / 60) + " min");
        } catch (const Error &e) {
            problem = std::string("your access token was refused: ") + e.what();
        }
    }
    if (!problem.empty()) {
        if (checkOwnToken)
            throw Error("this run is closed: " + problem + howTo);
        log::warning("access", "FAULT: trying to join anyway although " + problem + " (DEDLOC_FAULT_IGNORE_TOKEN)");
    }
    return access;
}

void keepAdmittedRecords(const RunAccess &access, std::vector<SignedRecord> &records, const std::string &selfPeerId)
{
    std::erase_if(records, [&](const SignedRecord &r) {
        return r.peerId != selfPeerId && !access.security->admission(r.publicKey).empty();
    });
}

} // namespace dedloc
