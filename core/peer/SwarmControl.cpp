// SwarmPeer's control thread (peer/SwarmPeerImpl.h): publishes this peer's progress record,
// metrics and donor advert on the DHT every progress period, reads the others' progress into the
// tracker, and keeps the snapshot's view of the swarm.
#include "peer/SwarmPeerImpl.h"

#include "util/AtomicFile.h"
#include "util/Clock.h"
#include "util/Log.h"

#include <cmath>
#include <future>
#include <tuple>

namespace dedloc {

namespace {

// How often the control loop logs what the DHT node holds: for a long run's memory, whose
// growth per step is otherwise hard to tell from the allocator's swings.
constexpr double FootprintLogSeconds = 600.0;

void logDhtFootprint(const DhtNode &dht)
{
    const auto f = dht.footprint();
    log::info("dht", "node holds " + std::to_string(f.searches) + " searches (" + std::to_string(f.unfinishedSearches)
                         + " unfinished), stores " + std::to_string(f.storedValues) + " values under "
                         + std::to_string(f.storedKeys) + " keys (" + std::to_string(f.storedBytes / 1024) + " KiB)");
}

} // namespace

void SwarmPeer::Impl::loadBans()
{
    const auto file = checkpointDir / "bans.json";
    std::error_code ec;
    if (!opt.resume || !std::filesystem::exists(file, ec))
        return;
    try {
        const int restored = bans->restore(nlohmann::json::parse(readWholeFile(file)), unixNow());
        bansSaved = bans->bansImposed();
        if (restored > 0)
            log::info("ban", std::to_string(restored) + " ban(s) restored from " + file.string());
    } catch (const std::exception &e) {
        log::warning("ban", "bans not restored from " + file.string() + ": " + e.what());
    }
}

void SwarmPeer::Impl::saveBansIfChanged()
{
    const auto imposed = bans->bansImposed();
    if (imposed == bansSaved)
        return;
    bansSaved = imposed; // a failed write (full disk) is tried again at the next ban, not every period
    try {
        std::filesystem::create_directories(checkpointDir); // made by the first checkpoint otherwise
        writeFileAtomically(checkpointDir / "bans.json", bans->toJson(unixNow()).dump() + "\n");
    } catch (const std::exception &e) {
        log::warning("ban", std::string("bans not saved: ") + e.what());
    }
}

void SwarmPeer::Impl::controlLoop()
{
    long advertisedEpoch = -1;
    double advertisedAt = -1e9;             // Unix seconds
    double creditReadAt = unixNow() - 12.0; // the first read ~3 s after the start
    double bootstrappedAt = unixNow();
    // Credit reads and publications run beside the loop: a slow DHT answer must not delay the
    // progress records that groups are formed from.
    std::future<void> creditRead, creditPublish, reachabilityCheck, bootstrapping, versionsCheck;
    double versionsCheckedAt = unixNow() - 25.0; // the first check ~5 s after the start
    double reachabilityCheckStart = unixNow();
    double footprintLoggedAt = unixNow();
    auto idle = [](const std::future<void> &f) {
        return !f.valid() || f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    };
    while (!stopFlag.load() && !workerDone.load()) {
        ProgressRecord mine;
        std::optional<std::string> metricsPayload;
        std::optional<DonorAdvert> advert;
        std::optional<std::pair<long, std::string>> heldClaim;
        {
            std::lock_guard lock(mutex);
            mine = myRecord;
            metricsPayload.swap(pendingMetrics);
            advert = donorAdvert;
            heldClaim = heldStateClaim;
        }
        // The record outlives three turns of the period chosen now (the wait below is at most that).
        const double ttl = progressTtl(nextProgressPeriod());
        const double turnStart = unixNow();
        if (service && advert && !advert->mayDiffer) // the state served vouches for itself
            std::tie(mine.stateEpoch, mine.stateDigest) = service->stateDigest();
        else if (heldClaim) // a client-mode trainer's: the state it holds
            std::tie(mine.stateEpoch, mine.stateDigest) = *heldClaim;
        const bool progressPut = mine.peerId.empty() || exchange().publish(*dht, mine, ttl);
        const double progressPutSeconds = unixNow() - turnStart;
        if (metricsPayload)
            dht->publish(runKey(swarmId, "metrics"), *metricsPayload, 120.0, 2.0);
        // A new advert (first one, new epoch) goes out at once, then every 10 s or so (it lives 30 s).
        // One the DHT did not confirm (a first peer without neighbours yet) goes out again next turn.
        if (advert && (unixNow() - advertisedAt >= 9.0 || advert->epoch != advertisedEpoch)
            && dht->publish(runKey(swarmId, "donors"), encodeDonorAdvert(*advert), 30.0, 2.0)) {
            advertisedEpoch = advert->epoch;
            advertisedAt = unixNow();
        }
        readProgress();
        if (recorder) {
            auto records = dht->fetch(runKey(swarmId, "metrics"), 2.0);
            // Closed run: only admitted peers' metrics are recorded.
            keepAdmittedRecords(access, records, identity->peerId());
            recorder->record(records);
            if (idle(creditPublish))
                creditPublish = std::async(std::launch::async, [this] { publishCredit(); });
        }
        // A trainer asks what the monitors recorded of it every ~15 s.
        if (opt.role == PeerRole::Trainer && unixNow() - creditReadAt >= 15.0 && idle(creditRead)) {
            creditReadAt = unixNow();
            creditRead = std::async(std::launch::async, [this] { readCredit(); });
        }
        // A trainer whose reachability nobody could check at start asks again now and then
        // (a donor to ask may have come meanwhile); the check can take seconds.
        if (reachabilityUnsettled.load() && idle(reachabilityCheck)
            && unixNow() >= reachabilityCheckStart + nextReachabilityCheckDelay()) {
            reachabilityCheckStart = unixNow();
            reachabilityCheck = std::async(std::launch::async, [this] { recheckReachability(); });
        }
        firstFetchDone = true;
        // Peers of the run on another version of its manifest, every 30 s (they read no record
        // of this swarm's keys, nor this peer theirs).
        if (unixNow() - versionsCheckedAt >= 30.0 && idle(versionsCheck)) {
            versionsCheckedAt = unixNow();
            versionsCheck = std::async(std::launch::async, [this] { checkManifestVersions(); });
        }
        // The bootstrap peers (the lead's server) again every 30 s: one that restarted after
        // this node forgot it would otherwise never hear of this peer. Beside the loop: resolving
        // a name can take as long as the resolver's timeout.
        if (unixNow() - bootstrappedAt >= BootstrapAgainSeconds && idle(bootstrapping)) {
            bootstrappedAt = unixNow();
            bootstrapping = std::async(std::launch::async, [this] { dht->bootstrapAgain(); });
        }
        if (const double turn = unixNow() - turnStart; turn > ttl / 3.0 || !progressPut)
            log::debug("swarm", "control turn took " + std::to_string(turn) + " s (record lives " + std::to_string(ttl)
                                    + " s); progress record " + (progressPut ? "put in " : "not confirmed in ")
                                    + std::to_string(progressPutSeconds) + " s");
        saveBansIfChanged();
        if (unixNow() - footprintLoggedAt >= FootprintLogSeconds) {
            footprintLoggedAt = unixNow();
            logDhtFootprint(*dht);
        }
        const double steadyNow = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
        if (heapTrimmer.due(steadyNow) && metrics && opt.role != PeerRole::Trainer) {
            // A peer that takes no steps has no step event to carry its memory: a "memory" event
            // after each trim (a soak tells a monitor's leak from its swings by its heap).
            nlohmann::json memory = nlohmann::json::object();
            addMemoryFields(memory);
            metrics->write("memory", std::move(memory));
        }
        waitForNextRecord(std::min(nextProgressPeriod(), ttl / 3.0));
    }
    for (auto *f : {&creditRead, &creditPublish, &reachabilityCheck, &bootstrapping, &versionsCheck})
        if (f->valid())
            f->wait();
    saveBansIfChanged(); // a ban of the last period
    // The worker ended (last step, --duration, Ctrl-C): publish its final epoch and the
    // metrics of its last step, which the loop above may not have had a round for.
    ProgressRecord mine;
    std::optional<std::string> metricsPayload;
    {
        std::lock_guard lock(mutex);
        mine = myRecord;
        metricsPayload.swap(pendingMetrics);
    }
    // The last record says this peer computes nothing more (as a paused one does) and lives two
    // base periods: nobody waits for it in a group or counts its samples, and its peers see it
    // leave at once instead of after a TTL.
    mine.paused = true;
    mine.samplesAccumulated = 0;
    mine.samplesPerSecond = 0.0;
    mine.time = unixNow();
    mine.expiresAt = mine.time + std::max(2.0, 2.0 * opt.progressPeriod);
    // Both at once, each confirmed or given up within FinalPublishTimeout: a loaded machine may
    // need more than a second, and a stopped peer should still exit promptly.
    constexpr double FinalPublishTimeout = 3.0;
    std::future<bool> progress, lastMetrics;
    if (!mine.peerId.empty())
        progress = std::async(std::launch::async, [&] {
            return exchange().publish(*dht, mine, mine.expiresAt - mine.time, FinalPublishTimeout);
        });
    if (metricsPayload)
        lastMetrics = std::async(std::launch::async, [&] {
            return dht->publish(runKey(swarmId, "metrics"), *metricsPayload, 120.0, FinalPublishTimeout);
        });
    if (lastMetrics.valid() && !lastMetrics.get())
        log::warning("swarm", "the DHT did not confirm this peer's last metrics; the monitor may miss its last step");
    if (progress.valid())
        progress.wait();
}

ProgressExchange &SwarmPeer::Impl::exchange()
{
    if (!progressExchange)
        progressExchange.emplace(swarmId, identity->peerId(), DefaultShardCapacity, 3 * opt.progressPeriod + 5);
    return *progressExchange;
}

void SwarmPeer::Impl::readProgress()
{
    auto read = exchange().read(*dht);
    const auto &records = read.records;
    // Closed run: tallies of admitted summarizers only.
    keepAdmittedRecords(access, read.tallies, identity->peerId());
    const double now = unixNow();
    std::vector<ProgressRecord> admitted;
    for (const auto &record : records) {
        if (record.peerId == identity->peerId())
            continue;
        try {
            auto r = parseProgress(record);
            // A claim no honest peer makes is this record's signer's own: one strike per read
            // (BanList counts none while the signer is banned).
            if (const auto why = impossibleClaim(r, manifest->training.targetBatchSize); !why.empty()) {
                bans->strike(record.peerId, "its progress record " + why, now);
                continue;
            }
            // Closed run: a peer without a valid token neither counts toward the batch nor
            // gets through our handshakes; one with a token is admitted from now on.
            if (access.security->admitRecord(record.publicKey, r.accessToken))
                admitted.push_back(std::move(r));
        } catch (const std::exception &e) {
            log::warning("swarm", "ignored a progress record of " + record.peerId.substr(0, 8) + ": " + e.what());
        }
    }
    std::optional<ShardTally> tally;
    {
        std::lock_guard lock(mutex);
        std::string seen; // whose records a read returns: logged when that changes
        for (const auto &r : admitted) {
            if (!seen.empty())
                seen += ' ';
            seen += r.peerId.substr(0, 8);
        }
        // None of a banned peer's tallies, held ones included.
        tally = exchange().ingest(admitted, read.tallies, tracker, now,
                                  [&](const std::string &id) { return bans->isBanned(id, now); });
        if (seen != progressRecordsSeen)
            log::debug("swarm", "progress records read: " + (seen.empty() ? std::string("none") : seen));
        progressRecordsSeen = seen;
        refreshSwarmView(now);
    }
    // This peer summarizes its shard for the others (a sharded swarm): the tally lives as its record.
    if (tally)
        exchange().publishTally(*dht, *tally, progressTtl(nextProgressPeriod()));
}

double SwarmPeer::Impl::nextProgressPeriod()
{
    std::lock_guard lock(mutex);
    const double eta = snap.etaSeconds; // < 0: unknown
    return adaptiveProgressPeriod(opt.progressPeriod, maxProgressPeriod(), eta < 0.0 ? -1.0 : eta,
                                  opt.matchmaking.window, unixNow() - lastEpochChange);
}

void SwarmPeer::Impl::waitForNextRecord(double period)
{
    std::unique_lock lock(wakeMutex);
    wake.wait_for(lock, std::chrono::duration<double>(period), [&] { return stopFlag.load() || publishSoon.load(); });
    publishSoon = false;
}

void SwarmPeer::Impl::refreshSwarmView(double now)
{
    // A monitor vouches for the epoch the trainers step at, which its own state may lag behind.
    if (opt.role == PeerRole::Monitor)
        myRecord.followedEpoch = std::max(0L, tracker.follow(now));
    const auto g = tracker.global(now, opt.role == PeerRole::Trainer ? myRecord.epoch : ProgressTracker::NotTraining);
    if (g.globalEpoch != snap.globalEpoch)
        lastEpochChange = now;
    snap.globalEpoch = g.globalEpoch;
    snap.swarmSamplesAccumulated = g.samplesAccumulated;
    snap.swarmSamplesPerSecond = g.samplesPerSecond;
    snap.etaSeconds = std::isfinite(g.eta) ? g.eta : -1.0;
    snap.trainers = snap.auxiliaries = snap.monitors = snap.clientModePeers = 0;
    snap.peers.clear();
    auto count = [&](const ProgressRecord &r) {
        (r.role == PeerRole::Trainer ? snap.trainers : r.role == PeerRole::Auxiliary ? snap.auxiliaries : snap.monitors)++;
        if (r.clientMode)
            ++snap.clientModePeers;
        snap.peers.push_back({r.peerId, r.role, r.clientMode, r.paused, r.epoch, r.samplesAccumulated,
                              r.samplesPerSecond, now - r.time, r.averages});
    };
    // From the tracker, not from this read alone: a DHT read may miss a record that is
    // still live (OpenDHT answers with what it found in time).
    count(myRecord);
    for (const auto &r : tracker.liveRecords(now))
        if (r.peerId != identity->peerId())
            count(r);
    // A sharded swarm's other shards, by their tallies: counted, not listed.
    for (const auto &t : tracker.shardTallies()) {
        snap.clientModePeers += t.expiresAt > now ? t.clients : 0;
        for (const auto &e : t.epochs)
            snap.trainers += t.expiresAt > now ? e.trainers : 0;
    }
    ++snap.sequence;
}

std::size_t SwarmPeer::Impl::expectedPeers(long epoch, bool pastIt, bool thisShard)
{
    const double now = unixNow();
    std::lock_guard lock(mutex);
    std::size_t n = 1;
    const long upTo = pastIt ? epoch + 1 : epoch;
    for (const auto &id : tracker.expectedPeers(identity->peerId(), upTo, ExpectedLag + (upTo - epoch),
                                                3 * opt.progressPeriod + 5, now))
        n += bans->isBanned(id, now) ? 0 : 1;
    return n + (thisShard ? 0 : tracker.expectedElsewhere(upTo, ExpectedLag + (upTo - epoch), now));
}

std::string SwarmPeer::Impl::describeRecords()
{
    const double now = unixNow();
    std::lock_guard lock(mutex);
    std::string out;
    for (const auto &r : tracker.liveRecords(now)) {
        if (r.peerId == identity->peerId())
            continue;
        char age[32];
        std::snprintf(age, sizeof age, "%.1f", now - r.time);
        out += (out.empty() ? "" : "; ") + r.peerId.substr(0, 8) + " " + peerRoleName(r.role) + " epoch "
               + std::to_string(r.epoch) + " made " + age + " s ago" + (r.averages ? "" : ", not averaging")
               + (r.paused ? ", paused" : "") + (r.syncing ? ", syncing" : "");
    }
    return out.empty() ? "no live record of another peer" : out;
}

} // namespace dedloc
