// The credit a monitor records of each peer (monitor/CreditLedger.h), as the swarm peer handles
// it: a monitor publishes the changed credits; a trainer keeps its own per-step record (memory
// and <run data dir>/contribution.csv), reads what the monitors say of it and counts its own
// samples over the same steps (PeerSnapshot::monitorCredit, ownCredit).
#include "peer/SwarmPeerImpl.h"

#include "util/Log.h"

#include <cmath>
#include <cstdio>

namespace dedloc {
namespace {

// Credits published per control round (each a DHT put): a swarm of hundreds of peers spreads
// its first publication over a few rounds instead of stalling one.
constexpr std::size_t CreditsPerRound = 8;
constexpr double CreditTtlSeconds = 3600.0;
// Own steps kept in memory for the comparison (the file keeps them all).
constexpr std::size_t OwnStepsKept = 100000;

} // namespace

void SwarmPeer::Impl::publishCredit()
{
    if (!recorder)
        return;
    for (const auto &[peer, payload] : recorder->takeChangedCredit(CreditsPerRound))
        dht->publish(runKey(manifest->runId, "credit/" + peer), payload, CreditTtlSeconds, 2.0);
}

void SwarmPeer::Impl::readCredit()
{
    std::set<std::string> monitors;
    {
        std::lock_guard lock(mutex);
        for (const auto &p : snap.peers)
            if (p.role == PeerRole::Monitor)
                monitors.insert(p.peerId);
        // A sharded swarm's monitors in other shards, as their shards' tallies name them.
        for (const auto &t : tracker.shardTallies())
            monitors.insert(t.monitors.begin(), t.monitors.end());
    }
    if (monitors.empty())
        return;
    const std::string me = identity->peerId();
    std::optional<MonitorCredit> best;
    // Only a monitor of this swarm vouches: anybody may put a value under the key.
    for (const auto &r : dht->fetch(runKey(manifest->runId, "credit/" + me), 2.0)) {
        if (!monitors.count(r.peerId))
            continue;
        auto credit = creditFromJson(r.payload, me, r.peerId, r.time);
        if (credit && (!best || credit->throughStep() > best->throughStep()))
            best = std::move(credit);
    }
    if (!best)
        return;
    std::lock_guard lock(creditMutex);
    const auto own = countOwnCredit(ownStepSamples, *best);
    update([&](PeerSnapshot &s) {
        s.monitorCredit = *best;
        s.ownCredit = own;
    });
}

void SwarmPeer::Impl::recordOwnStep(long step, long long samples, double loss)
{
    {
        std::lock_guard lock(creditMutex);
        ownStepSamples[step] = samples;
        while (ownStepSamples.size() > OwnStepsKept)
            ownStepSamples.erase(ownStepSamples.begin());
    }
    if (!contributionRecord.isOpen()) {
        const auto file = checkpointDir / "contribution.csv";
        std::error_code ec;
        const bool fresh = !std::filesystem::exists(file, ec) || std::filesystem::file_size(file, ec) == 0;
        try {
            contributionRecord.open(file, "this peer's contribution record");
        } catch (const std::exception &e) {
            log::warning("credit", e.what());
            return;
        }
        if (fresh && !contributionRecord.append("step,time,samples,loss\n"))
            log::warning("credit", contributionRecord.lastError());
        update([&](PeerSnapshot &s) { s.contributionRecord = file.string(); });
    }
    char line[128];
    std::snprintf(line, sizeof line, "%ld,%.0f,%lld,%s\n", step, unixNow(), samples,
                  std::isfinite(loss) && loss >= 0.0 ? std::to_string(loss).c_str() : "");
    if (!contributionRecord.append(line))
        log::warning("credit", contributionRecord.lastError());
}

} // namespace dedloc
