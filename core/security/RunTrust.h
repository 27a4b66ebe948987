#pragma once
// Trust in a run manifest: before a peer joins (and before anything is trained) the run's
// manifest.json must carry a valid minisign signature (manifest.json.minisig, see
// security/Minisign.h) by the run's lead key.
//
// Which key is the lead key (the trust anchor), in this order:
//   1. the key pinned for this run id: <trust dir>/<run id>.pub (<trust dir> is
//      <user data dir>/trust, see run/RunPaths.h);
//   2. the key the app was installed with (a path, e.g. <prefix>/share/dedloc/default-run/lead.pub);
//   3. on first join only: lead.pub beside the manifest (trust on first use).
// After a manifest verifies, the key that verified it is pinned for the run id (written
// atomically), so a later manifest signed by another key is refused.
//
// Key rotation: a new lead key is accepted only through rotation statements in
// <run dir>/rotations/: "<NEW KEY ID>.pub" (the new public key file) with its signature
// "<NEW KEY ID>.pub.minisig" made by the OLD key, whose trusted comment is exactly
// "dedloc-lead-key-rotation to:<NEW KEY ID>" (so no other signed .pub counts as a rotation).
// Starting from the anchor, statements are followed while the manifest's signer differs from the
// current key: K0 -> K1 -> ... -> Kn (at most 64 steps). Each step must verify under the current key.
//
// Errors: a missing signature, a bad signature, a signer that no rotation chain reaches, a
// rotation signed by a stranger, a malformed key: dedloc::Error with a sentence that says the
// run is refused and why. Not thread-safe for the same trust directory (one joining peer).
#include "security/Minisign.h"

#include <filesystem>
#include <optional>
#include <string>

namespace dedloc {

constexpr const char *RotationCommentPrefix = "dedloc-lead-key-rotation to:";

struct ManifestTrust {
    minisign::PublicKey key; // the key that verified the manifest (now pinned)
    std::string anchor;      // "pinned", "installed" or "first use"
    int rotations = 0;       // rotation statements followed from the anchor
    std::string trustedComment;
    std::filesystem::path pinFile;
};

// The run id is read from the manifest's "run_id" before verification only to find the pin;
// a manifest that lies about it is checked against that other run's pin (and fails).
ManifestTrust verifyRunManifest(const std::filesystem::path &manifest, const std::filesystem::path &trustDir,
                                const std::optional<std::filesystem::path> &installedLeadKey);

// Writes <run dir>/rotations/<NEW KEY ID>.pub and its signature by `oldKey`. Returns the path
// of the statement's .pub file.
std::filesystem::path writeRotationStatement(const minisign::SecretKey &oldKey, const minisign::PublicKey &newKey,
                                             const std::filesystem::path &runDir);

} // namespace dedloc
