// SwarmPeer's check of the run's manifest versions (peer/SwarmPeerImpl.h; averaging/
// ManifestVersions.h): every ~30 s on the control thread's side, this peer's fingerprint goes out
// under the run id's "versions" key and the others' come back. Peers on another version live in
// another swarm (other DHT keys): this is how each side still learns of the other.
#include "peer/SwarmPeerImpl.h"

#include "averaging/ManifestVersions.h"
#include "util/Clock.h"
#include "util/Log.h"

namespace dedloc {

void SwarmPeer::Impl::checkManifestVersions()
{
    constexpr double RecordSeconds = 90.0; // three turns of the check
    long epoch;
    {
        std::lock_guard lock(mutex);
        epoch = myRecord.epoch;
    }
    const auto key = runKey(manifest->runId, "versions");
    (void)dht->publish(key, encodeVersionRecord(fingerprint, epoch), RecordSeconds, 2.0);
    auto records = dht->fetch(key, 2.0);
    // Closed run: only admitted peers' versions are told (as only their metrics are recorded).
    keepAdmittedRecords(access, records, identity->peerId());
    const auto others = otherVersions(records, fingerprint, identity->peerId());
    update([&](PeerSnapshot &s) { s.otherVersionPeers = static_cast<int>(others.peers); });
    // A version is told once when it appears, and forgotten when no read saw it for as long as
    // its records live: a read that missed a record does not make it appear again.
    const double now = unixNow();
    const bool hadAny = !otherFingerprintsSeen.empty();
    bool appeared = false;
    for (const auto &[f, peers] : others.byFingerprint) {
        if (!otherFingerprintsSeen.count(f) && otherFingerprintsSeen.size() >= OtherVersions::MaxFingerprints)
            continue;
        appeared = appeared || !otherFingerprintsSeen.count(f);
        otherFingerprintsSeen[f] = now;
    }
    std::erase_if(otherFingerprintsSeen, [&](const auto &seen) { return now - seen.second > RecordSeconds; });
    if (appeared)
        log::warning("swarm", describeOtherVersions(others, fingerprint, epoch));
    else if (hadAny && otherFingerprintsSeen.empty())
        log::info("swarm", "no peer of this run trains under another version of its manifest any more");
}

} // namespace dedloc
