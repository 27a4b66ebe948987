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
    const auto others = otherVersions(dht->fetch(key, 2.0), fingerprint, identity->peerId());
    update([&](PeerSnapshot &s) { s.otherVersionPeers = static_cast<int>(others.peers); });
    std::set<std::string> seen;
    for (const auto &[f, peers] : others.byFingerprint)
        seen.insert(f);
    if (seen == otherFingerprintsSeen)
        return;
    otherFingerprintsSeen = std::move(seen);
    if (others.peers > 0)
        log::warning("swarm", describeOtherVersions(others, fingerprint, epoch));
    else
        log::info("swarm", "no peer of this run trains under another version of its manifest any more");
}

} // namespace dedloc
