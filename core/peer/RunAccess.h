#pragma once
// A peer's way into a run : the data-plane security every peer uses (CurveZMQ on
// every link, net/DataPlaneSecurity.h) and, in a closed run (manifest "access": "closed"), the
// peer's own access token (security/AccessToken.h).
//
// Where a volunteer's token comes from: `--token FILE`, else <data dir>/runs/<run id>/access.token
// (the file holds the one line `dedloc-lead issue-token` printed; surrounding whitespace is
// ignored). Before joining, the peer checks its own token exactly as the others will at the
// handshake (lead key, run id, validity, bound to this peer's key), so a volunteer with a
// missing, expired or foreign token gets one clear sentence instead of silent refusals.
// The token then travels in the peer's signed progress records; the others verify it and admit
// the peer's connections (DataPlaneSecurity::admitRecord).
//
// Errors: dedloc::Error whose message starts "this run is closed: " for every token problem,
// and for a closed run whose lead key is unknown (manifest not verified).
#include "net/DataPlaneSecurity.h"
#include "net/DhtNode.h"
#include "run/RunManifest.h"
#include "security/Minisign.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dedloc {

[[nodiscard]] std::filesystem::path defaultAccessTokenPath(const std::filesystem::path &dataDir,
                                                           const std::string &runId);

struct RunAccess {
    std::shared_ptr<DataPlaneSecurity> security;
    std::string ownToken; // "" in open runs
    std::int64_t ownTokenExpiresAt = 0; // Unix seconds the own token stops being accepted; 0: none
};

// `tokenFile` empty: the default path. `checkOwnToken` false (fault injection for tests only:
// a peer that tries anyway, to prove the others refuse it) publishes whatever token it has.
[[nodiscard]] RunAccess setUpRunAccess(const RunManifest &manifest, const PeerIdentity &identity,
                                       const std::optional<minisign::PublicKey> &leadKey,
                                       const std::filesystem::path &dataDir, std::filesystem::path tokenFile,
                                       bool checkOwnToken = true);

// Closed runs: removes the records of signers the run does not admit (DataPlaneSecurity::
// admission), this peer's own (`selfPeerId`) kept; open runs admit every signer.
void keepAdmittedRecords(const RunAccess &access, std::vector<SignedRecord> &records, const std::string &selfPeerId);

} // namespace dedloc
