// SwarmPeer's state sharing (docs/PROTOCOL.md "State sharing"; peer/SwarmPeerImpl.h): downloading the
// state from a donor, publishing our own as a donor, averaging parameters and optimizer state,
// and striking the members whose round messages were invalid.
#include "peer/SwarmPeerImpl.h"

#include "averaging/ModelAgreement.h"
#include "averaging/StateDownload.h"
#include "averaging/StateRoundPlan.h"
#include "averaging/StateVouching.h"
#include "net/WireMessage.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace dedloc {

namespace {
// " (donors advertise epochs 3-5)": why no donor was in range, for the log and the window.
std::string advertisedEpochs(const std::vector<DonorAdvert> &donors)
{
    if (donors.empty())
        return " (no donor advertises a state)";
    const auto [lo, hi] = std::minmax_element(donors.begin(), donors.end(),
                                              [](const DonorAdvert &a, const DonorAdvert &b) { return a.epoch < b.epoch; });
    return " (" + std::to_string(donors.size()) + " donor(s) advertise epochs " + std::to_string(lo->epoch) + "-"
           + std::to_string(hi->epoch) + ")";
}
} // namespace

std::vector<DonorAdvert> SwarmPeer::Impl::usableDonors()
{
    auto donors = fetchDonors(*dht, swarmId, identity->peerId());
    const double now = unixNow();
    std::erase_if(donors, [&](const DonorAdvert &a) { return bans->isBanned(a.peerId, now); });
    return donors;
}

std::string SwarmPeer::Impl::whyVouchedLate(const std::string &donorId, long epoch, const std::string &digest)
{
    // The donor may have stepped after its last record: the records get two progress periods
    // (and a second for the DHT) to catch up before its state counts as one nobody vouches for.
    const double until = unixNow() + 2.0 * opt.progressPeriod + 1.0;
    for (;;) {
        std::string why;
        {
            std::lock_guard lock(mutex);
            why = whyStateNotVouched(tracker.liveRecords(unixNow()), identity->peerId(), donorId, epoch, digest);
        }
        if (why.empty() || stopFlag.load() || unixNow() >= until)
            return why;
        sleepFor(0.1);
    }
}

bool SwarmPeer::Impl::downloadAndLoadState(long minEpoch, std::string *why, bool consistentOnly)
{
    // Donors whose state agrees with the swarm's first; then, unless repairing, the others (a
    // state that may differ still beats staying behind, and is repaired in the next group).
    const auto all = usableDonors();
    long believed; // the swarm's corroborated epoch: a donor far beyond it is a stranger's claim
    {
        std::lock_guard lock(mutex);
        const bool trains = opt.role == PeerRole::Trainer;
        believed = tracker.global(unixNow(), trains ? trainer->step() : ProgressTracker::NotTraining).globalEpoch;
    }
    std::string reason; // why the last donor asked failed
    bool asked = false;
    std::set<std::string> unvouched; // donors whose state no other record claims
    for (const bool mayDiffer : {false, true}) {
        if (mayDiffer && consistentOnly)
            break;
        std::vector<DonorAdvert> donors;
        std::copy_if(all.begin(), all.end(), std::back_inserter(donors),
                     [&](const DonorAdvert &d) { return d.mayDiffer == mayDiffer || unvouched.count(d.peerId); });
        StateDownloadOptions o;
        o.maxEpoch = std::max(minEpoch, believed) + MaxEpochLead;
        if (!mayDiffer)
            o.vouch = [&](const std::string &donorId, long epoch, const std::string &digest) {
                if (!swarmDigestWanted.empty() && digest != swarmDigestWanted)
                    return std::string("not the state most peers hold");
                auto w = whyVouchedLate(donorId, epoch, digest);
                if (!w.empty())
                    unvouched.insert(donorId);
                return w;
            };
        auto ranked = rankDonors(std::move(donors), minEpoch, o.maxEpoch);
        if (ranked.empty())
            continue; // the reason of a pass that asked someone is kept
        asked = true;
        auto s = downloadState(ranked, swarmId, minEpoch, static_cast<std::uint64_t>(trainer->stateElements()),
                               o, stopFlag, &reason, access.security, bans.get());
        if (!s)
            continue;
        const long from = trainer->step();
        trainer->loadStateFlat(s->values, s->epoch);
        reportCatchUp(from, "downloaded");
        errorFeedback.reset();
        if (mayDiffer)
            log::warning("state", "took a state that may differ from the swarm's (its donor is repairing, or no "
                                  "other peer vouches for it): the next group repairs it");
        stateIsSwarms = !mayDiffer;
        if (service)
            service->clearUpdates(); // our state now comes from elsewhere: no chain leads to it
        if (matchmaker)
            setRepair(mayDiffer);
        afterStateChange();
        return true;
    }
    if (why)
        *why = asked ? reason : "no state donor at epoch " + std::to_string(minEpoch) + " or later" + advertisedEpochs(all);
    return false;
}

bool SwarmPeer::Impl::syncState(long minEpoch)
{
    setState(PeerState::Syncing, "downloading state of epoch " + std::to_string(minEpoch) + " or later");
    // Published at once (the control thread's next write), so that no leader waits for us.
    syncingFlag = true;
    setMyRecord(0, 0.0);
    std::string why;
    const bool loaded = downloadAndLoadState(minEpoch, &why);
    syncingFlag = false;
    setMyRecord(0, emaSamplesPerSecond);
    if (!loaded) {
        log::warning("state", "state download failed: " + why);
        setState(PeerState::Syncing, "waiting for a state donor: " + why);
        return false;
    }
    return true;
}

void SwarmPeer::Impl::checkModelAgreement()
{
    const long epoch = trainer->step();
    const double now = unixNow();
    if (epoch != agreementEpoch) {
        agreementEpoch = epoch;
        agreementEpochSince = now;
    }
    if (!service || repairWanted || agreementChecked == epoch)
        return;
    std::vector<ProgressRecord> live;
    {
        std::lock_guard lock(mutex);
        live = tracker.liveRecords(now);
    }
    const auto others = static_cast<std::size_t>(stateClaimsAt(live, identity->peerId(), epoch));
    // The records read are this peer's shard's in a sharded swarm: so are the peers expected.
    const bool allHeard = others + 1 >= expectedPeers(epoch, false, true);
    if (!allHeard && now - agreementEpochSince < 2.0 * opt.progressPeriod + 1.0)
        return; // the others' records of this epoch may still be on their way
    const auto [stateEpoch, digest] = service->stateDigest();
    const auto strayed = stateEpoch == epoch ? strayedFromSwarm(live, identity->peerId(), epoch, digest) : std::nullopt;
    // A verdict on the records heard so far settles the epoch only once every expected peer's is
    // in: peers that strayed together may be heard first (a seal that left slower groups out lets
    // them step first) and look like the swarm. Until then each turn checks again, also after a
    // repair (a peer that took the strays' state for the swarm's is then repaired back).
    if (allHeard || stateEpoch != epoch)
        agreementChecked = epoch;
    if (!strayed)
        return;
    log::warning("swarm", "this peer's state of epoch " + std::to_string(epoch) + " is held by "
                              + std::to_string(strayed->withMine) + " peer(s), another by "
                              + std::to_string(strayed->claimants) + ": downloading theirs");
    swarmDigestWanted = strayed->swarmDigest;
    setRepair(true);
    if (repairByDownload())
        setRepair(false);
    swarmDigestWanted.clear();
}

void SwarmPeer::Impl::afterStateChange()
{
    // A state that may differ from the swarm's is served, and advertised as such.
    if (service) {
        service->setState(std::make_shared<StateSnapshot>(StateSnapshot{trainer->step(), trainer->stateFlat()}));
        std::lock_guard lock(mutex);
        if (!becameClient.load()) // nobody could download it
            donorAdvert = DonorAdvert{identity->peerId(), service->endpoint(), trainer->step(), {}, repairWanted};
    }
    // A client-mode trainer serves nothing, yet its record vouches for what it holds (a state
    // that may differ from the swarm's vouches for nothing). The hash (tens of ms for the tiny
    // model, far more for large ones) runs beside training; the previous claim is withdrawn
    // until it is done, and claims are made in the order of the states.
    if (claimHashing.valid())
        claimHashing.wait();
    {
        std::lock_guard lock(mutex);
        heldStateClaim.reset();
    }
    if (opt.role == PeerRole::Trainer && inClientMode() && !repairWanted) {
        auto state = std::make_shared<const std::vector<float>>(trainer->stateFlat());
        claimHashing = std::async(std::launch::async, [this, state, epoch = trainer->step()] {
            auto digest = sha256Hex(state->data(), state->size() * sizeof(float));
            std::lock_guard lock(mutex);
            heldStateClaim.emplace(epoch, std::move(digest));
        });
    }
    update([&](PeerSnapshot &s) { s.localEpoch = trainer->step(); });
}

void SwarmPeer::Impl::afterRound(const FormedGroup &group, const AllReduceReport &report)
{
    if (report.evidence) { // once the members' records are in, their sketches judge the reducers
        auditor->publishView(group.info, report.evidence, report.complete); // unless its merge published them
        auditor->schedule(group.info);
    }
    for (const auto &o : report.offences)
        bans->strike(group.info.members[o.member].peerId, "round " + group.info.groupId + ": " + o.reason, unixNow(),
                     o.messages);
    for (const auto &v : report.clipVerdicts) {
        const auto &sender = group.info.members[v.member].peerId;
        const auto j = outlierRecord.judge(sender, v.outlier);
        const auto why = "round " + group.info.groupId + ": parts far from the other senders' (CenteredClip) in "
                         + std::to_string(j.outliers) + " of its last " + std::to_string(j.judged) + " rounds here";
        if (j.ban)
            bans->ban(sender, why, unixNow());
        else if (j.offence)
            bans->strike(sender, why, unixNow());
    }
    if (report.roundTripSeconds > 0) // the farthest member of the last group: this peer's buffers cover it
        roundTripSeconds = report.roundTripSeconds;
    if (report.uploadBytesPerSecond <= 0) {
        // A member that sent nothing (no shard, no gradients: an auxiliary the last rates left
        // without a shard) learnt nothing about its link: it goes back to its declared rate, so
        // that a later leader gives it a share to measure again instead of none for good.
        const bool sentNothing = group.myIndex < report.shardSizes.size() && report.shardSizes[group.myIndex] == 0
                                 && group.info.members[group.myIndex].weight == 0.0;
        if (sentNothing && uploadMbit > 0) {
            uploadMbit = -1.0;
            matchmaker->setBandwidth(declaredBandwidth(opt.bandwidth));
        }
        return;
    }
    // Mbit/s, the unit of --bandwidth; half of each new measurement (rounds vary with the others'
    // links and the machine's load).
    // Above MaxMeasuredMbit a round is bound by the machines' CPUs, not the link: peers of one
    // machine measured 290-1560 Mbit/s on loopback, and shares sized by such figures handed one
    // of them the whole vector to reduce. Rates above it count as equal.
    const double measured = std::min(report.uploadBytesPerSecond * 8e-6, MaxMeasuredMbit);
    const bool first = uploadMbit <= 0;
    uploadMbit = first ? measured : 0.5 * uploadMbit + 0.5 * measured;
    // A cap lowered since the last rounds bounds what the next one can send at once.
    const double capMbit = upload.rate() * 8e-6;
    uploadMbit = capMbit > 0 ? std::min(uploadMbit, capMbit) : uploadMbit;
    matchmaker->setBandwidth(declaredBandwidth(uploadMbit));
    if (first)
        log::info("swarm", "measured upload: " + std::to_string(static_cast<int>(std::lround(uploadMbit))) + " Mbit/s (now this peer's bandwidth for shard sizes)");
}

AllReduceOptions SwarmPeer::Impl::roundOptions() const
{
    AllReduceOptions o;
    o.codec = manifest->compression;
    // An honest sender never computes more than twice the target batch in one epoch.
    o.maxWeight = static_cast<double>(maxSamplesPerEpoch(manifest->training.targetBatchSize));
    o.aggregation = manifest->aggregation();
    o.senderTimeout = opt.senderTimeout;
    o.reducerTimeout = opt.reducerTimeout;
    o.upload = &upload;
    o.download = &download;
    o.errorFeedback = &errorFeedback;
    // The uplink as measured in the last rounds, or as capped, whichever is lower.
    const double capMbit = upload.rate() > 0.0 ? upload.rate() * 8e-6 : 0.0;
    o.uploadMbit = capMbit > 0.0 && (uploadMbit <= 0.0 || capMbit < uploadMbit) ? capMbit : std::max(0.0, uploadMbit);
    o.roundTripSeconds = roundTripSeconds;
    o.staggered = staggerUplink(o.uploadMbit, o.roundTripSeconds);
    return o;
}

AllReduceOptions SwarmPeer::Impl::gradientRoundOptions(long epoch, const GroupInfo *group) const
{
    auto o = roundOptions();
    o.checkResults = group && checksResults(*group, o.aggregation, o.codec);
    o.tamperAverage = opt.tamperAverage;
    o.tamperPart = opt.tamperPart;
    std::lock_guard lock(mutex);
    auto bounds = tracker.weightBounds(epoch, unixNow());
    o.senderWeightBounds = std::move(bounds.perPeer);
    o.otherSendersWeightBound = bounds.others;
    return o;
}

bool SwarmPeer::Impl::averageStateNow(long epoch) const
{
    // Local updates: every member applies the same outer step to the same anchor, and the inner
    // statistics are each peer's own (DiLoCo): no periodic state round. Repairs still run one.
    if (manifest->averaging().mode == AveragingMode::LocalUpdates)
        return false;
    return opt.averageStateEvery > 0 && (epoch + 1) % opt.averageStateEvery == 0;
}

bool SwarmPeer::Impl::stateRoundDue(const FormedGroup &group, long epoch) const
{
    if (group.info.stateRound())
        return true;
    if (!averageStateNow(epoch))
        return false;
    if (!group.info.statesAgree())
        return true;
    log::info("swarm", "the " + std::to_string(group.info.members.size()) + " members of group " + group.info.groupId
                           + " joined with the same state (" + group.info.members.front().stateDigest.substr(0, 8)
                           + "...): no state round needed");
    return false;
}

void SwarmPeer::Impl::offerStateDigest(long epoch)
{
    std::string digest;
    if (averageStateNow(epoch) && trainer->step() == epoch) {
        const auto state = trainer->stateFlat();
        digest = sha256Hex(state.data(), state.size() * sizeof(float));
    }
    matchmaker->setStateDigest(std::move(digest));
}

bool SwarmPeer::Impl::averageState(const FormedGroup &group, long epoch)
{
    // Parameters and LAMB statistics: the mean of the trainers' copies, or in a repair a copy of
    // one fresh trainer's state (averaging/StateRoundPlan.h). Every member is a sender (weight 1
    // in the list), so that every member receives the result; the plan's weight 0 sends no values.
    const auto &listed = group.info.members;
    const bool trains = opt.role == PeerRole::Trainer;
    const auto plan = planStateRound(listed, group.myIndex, trains);
    // Without a fresh trainer the result is the swarm's state only if the group is the swarm.
    const bool freshTrainer = plan.freshTrainer;
    const bool wholeSwarm = listed.size() >= expectedPeers(epoch);
    auto members = listed;
    for (auto &m : members)
        m.weight = 1.0;
    auto state = trains ? trainer->stateFlat() : std::vector<float>(static_cast<std::size_t>(trainer->stateElements()));
    auto o = roundOptions();
    o.codec = Compression::None; // state is averaged exactly: equal states stay equal
    o.maxWeight = 1.0;           // every member sends weight 1 or 0 here
    o.reportOutliers = false;     // a diverged honest peer is what the round repairs
    o.myWeight = plan.myWeight;
    if (plan.source && *plan.source == group.myIndex)
        log::info("swarm", "the state round of group " + group.info.groupId + " copies this peer's state to "
                               + std::to_string(listed.size() - 1) + " peer(s)");
    AllReduceReport report;
    try {
        report = allReduce->run(group.info.groupId + "/state", members, group.myIndex, state, o);
    } catch (const Error &e) {
        log::warning("swarm", std::string("state round failed: ") + e.what());
        return false;
    }
    afterRound(group, report);
    // Every shard averaged at least one member of weight > 0: a shard whose weighted senders were
    // all excluded would be the plain mean of the weight-0 ones (zeros of the non-trainers).
    const bool everyShard = report.complete && report.minShardWeight > 0 && std::isfinite(report.minShardWeight);
    const bool swarmState = everyShard && (freshTrainer || wholeSwarm);
    if (trains && everyShard) {
        stateRoundChanged = state != trainer->stateFlat();
        trainer->loadStateFlat(state, trainer->step());
    } else if (!trains && swarmState) {
        trainer->loadStateFlat(state, epoch + 1);
        stateIsSwarms = true; // the next rounds' averages apply to it (followRound)
        log::info("swarm", "kept the swarm's state of epoch " + std::to_string(epoch + 1) + " from the state round");
    }
    if (everyShard && (trains || swarmState))
        afterStateChange();
    log::info("swarm", "averaged parameters and optimizer state with " + std::to_string(group.info.members.size())
                           + " peers" + (everyShard ? "" : " (incomplete: kept its own)"));
    return swarmState;
}

bool SwarmPeer::Impl::repairByDownload()
{
    // A donor already at this epoch whose advert does not say its state may differ holds the
    // group's state: downloading it costs the downlink, the fast side of a home connection,
    // where a state round would cost every member's uplink.
    // The donors of this step advertise it within a progress period or two: wait that long.
    std::string why;
    syncingFlag = true;
    bool loaded = false;
    for (const double until = unixNow() + 3.0 * opt.progressPeriod + 1.0; !loaded && !stopFlag.load();) {
        loaded = downloadAndLoadState(trainer->step(), &why, true);
        if (loaded || unixNow() > until)
            break;
        sleepFor(0.5);
    }
    syncingFlag = false;
    if (!loaded)
        log::info("swarm", "no donor to repair from (" + why + "): the next group averages the state");
    return loaded;
}

} // namespace dedloc
