// SwarmPeer's catching up by replay (docs/PROTOCOL.md "Replay instead of a second download";
// peer/SwarmPeerImpl.h): keeping each averaged step's update for others, fetching and applying
// the updates a peer missed, and joining the swarm's next step while the last one downloads.
#include "peer/SwarmPeerImpl.h"

#include "averaging/GroupMerge.h"
#include "averaging/ReplayPace.h"
#include "averaging/StateDownload.h"
#include "averaging/UpdateDownload.h"
#include "net/WireMessage.h"
#include "util/Error.h"
#include "util/Log.h"

#include <chrono>

namespace dedloc {

void SwarmPeer::Impl::keepUpdate(const std::shared_ptr<const AveragedUpdate> &update, bool stateIsTheUpdates)
{
    if (!service)
        return;
    if (update && stateIsTheUpdates)
        service->addUpdate(update);
    else if (!stateIsTheUpdates)
        service->clearUpdates();
}

void SwarmPeer::Impl::serveTheLastStep(long lastEpoch)
{
    // Nobody steps after the run's last step to repair a peer that missed it: the members of
    // another group of its epoch still fetch this group's average to merge it (GroupMerge.h), a
    // peer without a group adopts that merge, and one that fell behind replays the step's update
    // or downloads the state. This peer serves them while trainers and auxiliaries of that epoch
    // (syncing ones too: they download from it) have not reported the step. At most: another
    // group's round may run longer than this peer's (slower uplinks) and its members fetch only
    // after it, so twice this peer's round, or as long as a merge waits for a forming group
    // (GroupSeal: 15 s), plus the silence after which a round gives up on its reducers and the
    // fetch's request timeouts; a peer that never reports costs that once, at the run's end.
    if (!service || inClientMode() || stopFlag.load() || trainer->step() != lastEpoch)
        return;
    const double wait = std::max(MergeOptions{}.formingWait, 2.0 * lastRoundSeconds) + opt.reducerTimeout
                        + 2.0 * opt.matchmaking.requestTimeout;
    const double until = unixNow() + wait;
    const auto stillMerging = [&] {
        const double now = unixNow();
        std::lock_guard lock(mutex);
        std::size_t n = 0;
        for (const auto &r : tracker.liveRecords(now))
            n += r.peerId != identity->peerId() && r.role != PeerRole::Monitor && r.epoch == lastEpoch - 1 && !r.paused
                         && !bans->isBanned(r.peerId, now)
                     ? 1
                     : 0;
        return n;
    };
    for (std::size_t n = stillMerging(), told = 0; n > 0 && !stopFlag.load() && unixNow() < until; n = stillMerging()) {
        if (n != told) {
            const auto waiting = std::to_string(n) + " peer(s) of its epoch have not reported it";
            log::info("swarm", "the run's last step taken: serving it while " + waiting + " (at most "
                                   + std::to_string(static_cast<int>(wait)) + " s)");
            setState(PeerState::Training, "the run's last step taken: serving it while " + waiting);
        }
        told = n;
        sleepFor(0.1);
    }
}

void SwarmPeer::Impl::reportCatchUp(long from, const char *how)
{
    if (trainer->step() != from)
        metrics->write("catch_up", {{"step", trainer->step()}, {"from", from}, {"how", how}});
}

void SwarmPeer::Impl::leaveSearchBehind(GroupSearch &search)
{
    if (!search.active() || search.epoch() == trainer->step())
        return;
    if (!search.formed()) {
        search.drop();
        return;
    }
    // A group formed with this peer waits for its parts (and, where it reduces, its shard's
    // results): it takes part with weight 0 and keeps nothing of the result, as an auxiliary.
    const long epoch = search.epoch();
    const auto group = search.wait([] { return false; });
    if (!group)
        return;
    std::vector<float> zeros(static_cast<std::size_t>(trainer->parameterCount()));
    auto o = gradientRoundOptions(epoch);
    o.myWeight = 0.0;
    try {
        afterRound(*group, allReduce->run(group->info.groupId, group->info.members, group->myIndex, zeros, o));
    } catch (const Error &e) {
        log::warning("swarm", std::string("averaging round not run: ") + e.what());
        return;
    }
    log::info("swarm", "took part in group " + group->info.groupId +
                           " with weight 0 but not in its step: the update before it did not arrive");
}

bool SwarmPeer::Impl::lateForGroupOf(long epoch)
{
    {
        std::lock_guard lock(mutex);
        const double now = unixNow();
        if (tracker.decide(epoch, now) == StepDecision::Step || tracker.shouldStartMatchmaking(epoch, now))
            return true;
    }
    return merger->groupsStillRunning(epoch);
}

void SwarmPeer::Impl::searchWhileReplaying(GroupSearch &search, long epoch)
{
    if ((search.active() && search.epoch() == epoch) || expectedPeers(epoch) < 2)
        return;
    offerStateDigest(epoch); // none: the state of `epoch` is not here yet
    search.start(epoch, [this, epoch] { return expectedPeers(epoch); });
    log::info("swarm", "replaying up to epoch " + std::to_string(epoch) + ": looking for its group meanwhile");
}

bool SwarmPeer::Impl::replayUpdates(long global, const std::function<void(long)> &oneBehind)
{
    if (!stateIsSwarms || repairWanted || trainer->step() >= global)
        return false;
    auto donors = usableDonors();
    std::erase_if(donors, [](const DonorAdvert &d) { return d.mayDiffer; });
    const long from = trainer->step();
    setState(PeerState::Syncing, "replaying the averaged steps since epoch " + std::to_string(from));
    syncingFlag = true; // published at once: no leader waits for us meanwhile
    setMyRecord(0, 0.0);
    int tried = 0;
    long searched = -1; // the epoch whose group oneBehind looks for meanwhile
    // Every 8 updates: did the pass gain on the swarm? Told at most every 10 minutes.
    ReplayPass pass{0, 0.0, 0, global - from, 0};
    auto passStart = std::chrono::steady_clock::now();
    const auto judgePace = [&](std::size_t bytes) {
        ++pass.updates;
        pass.bytes += bytes;
        if (pass.updates < 2 * MinUpdatesToJudge)
            return;
        const auto now = std::chrono::steady_clock::now();
        pass.seconds = std::chrono::duration<double>(now - passStart).count();
        pass.behindAfter = global - trainer->step();
        if (const auto line = replayFallsBehind(pass); !line.empty() && unixNow() - replayPaceToldAt >= 600.0) {
            log::warning("state", line);
            setState(PeerState::Syncing, "replaying the averaged steps since epoch " + std::to_string(from) +
                                             ": slower than the swarm on this link");
            replayPaceToldAt = unixNow();
        }
        pass = ReplayPass{0, 0.0, 0, global - trainer->step(), 0};
        passStart = now;
    };
    for (const auto &donor : rankDonors(std::move(donors), from + 1, global + MaxEpochLead)) {
        // Once a group may be waiting, one donor's failure ends the replay (leaveSearchBehind).
        if (stopFlag.load() || trainer->step() > from || tried++ >= 3 || searched >= 0)
            break;
        if (access.security && !access.security->admission(donor.publicKey).empty())
            continue;
        UpdateFetcher fetcher(donor, swarmId, static_cast<std::uint64_t>(trainer->parameterCount()),
                              opt.progressPeriod * 4.0 + 5.0, stopFlag, access.security);
        double pollUntil = 0.0, pollLimit = 0.0;
        while (!stopFlag.load() && trainer->step() < global && trainer->step() != searched) {
            // The last update's download is short beside the group's sender timeout: the group
            // of the swarm's next step, forming meanwhile, can wait for this peer's parts.
            if (oneBehind && searched < 0 && global == trainer->step() + 1 && updateFetchSeconds >= 0.0 &&
                updateFetchSeconds < opt.senderTimeout / 3.0) {
                searched = lateForGroupOf(global) ? global + 1 : global;
                oneBehind(searched);
                global = searched;
                pollUntil = unixNow() + opt.senderTimeout / 3.0;
                pollLimit = unixNow() + opt.senderTimeout + opt.reducerTimeout; // a round's longest
            }
            const auto asked = std::chrono::steady_clock::now();
            auto u = fetcher.fetch(trainer->step());
            // The update of an epoch whose round still runs comes when the round ends.
            if (!u && fetcher.refused() && searched > trainer->step() && !stopFlag.load() && unixNow() < pollLimit &&
                (unixNow() < pollUntil || merger->groupsStillRunning(trainer->step()))) {
                sleepFor(0.2);
                continue;
            }
            if (!u)
                break;
            updateFetchSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
            std::vector<float> gradient;
            try {
                gradient = decodeUpdate(*u);
            } catch (const ProtocolError &e) {
                bans->strike(donor.peerId, std::string("update: ") + e.what(), unixNow());
                break;
            }
            (void)trainer->applyAveragedStep(gradient, u->batchSamples);
            const std::size_t bytes = u->bytes.size();
            keepUpdate(std::make_shared<const AveragedUpdate>(std::move(*u)), true);
            long swarm;
            {
                std::lock_guard lock(mutex);
                swarm = tracker.global(unixNow(), trainer->step()).globalEpoch;
            }
            global = std::max(global, swarm);
            judgePace(bytes);
        }
        if (fetcher.invalid())
            bans->strike(donor.peerId, "update download: " + fetcher.why(), unixNow());
        if (trainer->step() == from)
            log::info("state", "donor " + donor.peerId.substr(0, 8) + " gave no update of epoch " +
                                   std::to_string(from) + ": " + fetcher.why());
    }
    syncingFlag = false;
    setMyRecord(0, emaSamplesPerSecond);
    if (trainer->step() == from)
        return false;
    afterStateChange();
    reportCatchUp(from, "replayed");
    log::info("state", "replayed the averaged steps of epochs " + std::to_string(from) + "-" +
                           std::to_string(trainer->step() - 1) + " (instead of downloading the state): now at epoch " +
                           std::to_string(trainer->step()));
    return true;
}

} // namespace dedloc
