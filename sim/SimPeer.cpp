#include "SimPeer.h"

#include "averaging/AveragedUpdate.h"
#include "averaging/ButterflyAllReduce.h"
#include "averaging/GroupMerge.h"
#include "averaging/ModelAgreement.h"
#include "averaging/PeerService.h"
#include "averaging/ProgressExchange.h"
#include "averaging/ProgressPacing.h"
#include "averaging/ProgressTracker.h"
#include "averaging/StateDownload.h"
#include "net/PeerIdentity.h"
#include "util/Clock.h"
#include "util/Hash.h"
#include "util/Log.h"

#include <chrono>
#include <cmath>
#include <future>
#include <mutex>
#include <thread>
#include <tuple>

namespace dedloc::sim {

namespace {

void sleepSeconds(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.0, s))); }

// The peer's gradient at `epoch`: smooth in the index (so that codecs behave as on real
// gradients), different for every (seed, epoch), and cheap to draw.
std::vector<float> syntheticGradient(std::size_t elements, std::uint64_t seed, long epoch)
{
    std::vector<float> g(elements);
    const double phase = static_cast<double>(seed % 1000) * 0.37 + static_cast<double>(epoch) * 1.3;
    const double scale = 1.0 + static_cast<double>(seed % 7) * 0.1;
    for (std::size_t i = 0; i < elements; ++i)
        g[i] = static_cast<float>(scale * std::sin(phase + 0.001 * static_cast<double>(i)));
    return g;
}

// Peers expected at an epoch besides this one, as the swarm's trainers count them.
constexpr long ExpectedLag = 3;

} // namespace

struct SimPeer::Impl {
    SimPeerConfig config;
    PeerIdentity identity = PeerIdentity::generate();
    std::unique_ptr<DhtNode> dht;
    std::unique_ptr<PeerService> service;
    std::unique_ptr<AllReduceEndpoint> allReduce;
    std::unique_ptr<Matchmaker> matchmaker;
    std::unique_ptr<GroupMerger> merger;
    std::atomic<bool> stopFlag{false};
    std::thread worker, control;

    mutable std::mutex mutex; // guards everything below
    ProgressTracker tracker{TrackerOptions{}};
    std::optional<ProgressExchange> exchange; // made at start (control thread, and under `mutex` to ingest)
    SimPeer::ProgressReads reads;
    long epoch = 0;
    long samples = 0;
    double lastEpochChange = 0.0;
    std::vector<float> params;
    std::vector<SimStep> steps;
    long downloads = 0;
    bool diverged = false;        // the last step was alone or incomplete: the state may differ
    double lastRoundSeconds = 0.0; // the last complete round's (worker thread): GroupMerger::adopt
    long agreementChecked = -1, agreementEpoch = -1;
    double agreementSince = 0.0;

    explicit Impl(SimPeerConfig c) : config(std::move(c)) {}
    std::size_t expectedPeers(long atEpoch, bool pastIt = false, bool thisShard = false); // as SwarmPeer's
    void publishOwn();
    void readProgress();
    void controlLoop();
    void workerLoop();
    bool resync(long global, const std::string &digest = {});
    void checkAgreement();
    void step(std::future<std::optional<FormedGroup>> &search, std::atomic<bool> &cancel, double decidedAt);
    void apply(std::vector<float> gradient, SimStep s);
    void adoptMerge(long at, std::vector<float> &gradient, SimStep &s, const GroupInfo &round);
};

std::size_t SimPeer::Impl::expectedPeers(long atEpoch, bool pastIt, bool thisShard)
{
    std::lock_guard lock(mutex);
    const long upTo = pastIt ? atEpoch + 1 : atEpoch;
    const long lag = ExpectedLag + (upTo - atEpoch);
    const double now = unixNow();
    return 1 + tracker.expectedPeers(identity.peerId(), upTo, lag, 3 * config.progressPeriod + 5, now).size()
           + (thisShard ? 0 : tracker.expectedElsewhere(upTo, lag, now));
}

void SimPeer::Impl::publishOwn()
{
    ProgressRecord r;
    {
        std::lock_guard lock(mutex);
        r.peerId = identity.peerId();
        r.epoch = epoch;
        r.samplesAccumulated = samples;
        r.samplesPerSecond = config.samplesPerSecond;
        if (!diverged) // a state donor vouches for its state, as a trainer does
            std::tie(r.stateEpoch, r.stateDigest) = service->stateDigest();
    }
    const double ttl = std::max({10.0, 5 * config.progressPeriod, 3 * config.maxProgressPeriod});
    (void)exchange->publish(*dht, r, ttl);
}

void SimPeer::Impl::readProgress()
{
    const auto read = exchange->read(*dht);
    std::vector<ProgressRecord> records;
    for (const auto &record : read.records) {
        try {
            records.push_back(parseProgress(record));
        } catch (const std::exception &) {
            // a malformed record counts as none
        }
    }
    std::optional<ShardTally> tally;
    {
        std::lock_guard lock(mutex);
        tally = exchange->ingest(records, read.tallies, tracker, unixNow());
        ++reads.turns;
        for (const auto *list : {&read.records, &read.tallies})
            for (const auto &r : *list) {
                reads.records += 1.0;
                reads.bytes += static_cast<double>(r.value.size());
            }
        reads.shardCount = exchange->shardCount();
    }
    if (tally)
        (void)exchange->publishTally(*dht, *tally, std::max({10.0, 5 * config.progressPeriod, 3 * config.maxProgressPeriod}));
}

void SimPeer::Impl::controlLoop()
{
    long lastEpoch = -1, advertised = -1;
    for (long round = 0; !stopFlag.load(); ++round) {
        publishOwn();
        long at;
        {
            std::lock_guard lock(mutex);
            at = epoch;
        }
        if (at != advertised || round % 3 == 0) { // a state donor, as every reachable trainer
            const DonorAdvert a{identity.peerId(), service->endpoint(), at, identity.publicKey(), false};
            (void)dht->publish(runKey(config.runId, "donors"), encodeDonorAdvert(a), 30.0, 2.0);
            advertised = at;
        }
        readProgress();
        double period;
        {
            std::lock_guard lock(mutex);
            const double now = unixNow();
            const auto g = tracker.global(now, epoch);
            if (g.globalEpoch != lastEpoch) {
                lastEpoch = g.globalEpoch;
                lastEpochChange = now;
            }
            period = adaptiveProgressPeriod(config.progressPeriod, config.maxProgressPeriod,
                                            std::isfinite(g.eta) ? g.eta : -1.0, config.matchmaking.window,
                                            now - lastEpochChange);
        }
        // Sleeps the period, but publishes at once when this peer's epoch changes.
        long seen;
        {
            std::lock_guard lock(mutex);
            seen = epoch;
        }
        for (const double until = unixNow() + period; !stopFlag.load() && unixNow() < until;) {
            sleepSeconds(0.05);
            std::lock_guard lock(mutex);
            if (epoch != seen)
                break;
        }
    }
}

bool SimPeer::Impl::resync(long global, const std::string &digest)
{
    auto ranked = rankDonors(fetchDonors(*dht, config.runId, identity.peerId()), global, global + 2);
    StateDownloadOptions o;
    o.partTimeout = 5.0;
    if (!digest.empty())
        o.vouch = [&](const std::string &, long, const std::string &offered) {
            return offered == digest ? std::string() : std::string("not the state most peers hold");
        };
    std::string why;
    auto s = downloadState(ranked, config.runId, global, config.elements, o, stopFlag, &why);
    if (!s) {
        sleepSeconds(0.5);
        return false;
    }
    std::lock_guard lock(mutex);
    params = std::move(s->values);
    epoch = s->epoch;
    samples = 0;
    diverged = false;
    ++downloads;
    service->setState(std::make_shared<StateSnapshot>(StateSnapshot{epoch, params}));
    return true;
}

// As a trainer does (averaging/ModelAgreement.h): once the others' records of this epoch are in, a
// peer whose state is not the one most of them hold (or that stepped alone or incompletely)
// downloads theirs.
void SimPeer::Impl::checkAgreement()
{
    long at;
    bool strayedAlready;
    std::vector<ProgressRecord> live;
    const double now = unixNow();
    {
        std::lock_guard lock(mutex);
        at = epoch;
        strayedAlready = diverged;
        if (at != agreementEpoch) {
            agreementEpoch = at;
            agreementSince = now;
        }
        if (agreementChecked == at)
            return;
        live = tracker.liveRecords(now);
    }
    const auto others = static_cast<std::size_t>(stateClaimsAt(live, identity.peerId(), at));
    const bool allHeard = others + 1 >= expectedPeers(at, false, true); // this shard's records, this shard's peers
    if (!allHeard && now - agreementSince < 2.0 * config.progressPeriod + 1.0)
        return;
    const auto own = strayedAlready ? std::string() : service->stateDigest().second;
    const auto strayed = strayedFromSwarm(live, identity.peerId(), at, own);
    // Settled once an epoch, as a trainer does: a verdict once every expected peer's record is in
    // (until then each turn checks again, also after a repair); a repair that found no donor of
    // the swarm's state is tried again.
    if (strayed && !resync(at, strayed->swarmDigest))
        return;
    if (allHeard) {
        std::lock_guard lock(mutex);
        agreementChecked = at;
    }
}

void SimPeer::Impl::apply(std::vector<float> gradient, SimStep s)
{
    std::lock_guard lock(mutex);
    diverged = !s.adopted && (s.groupSize <= 1 || !s.complete); // a merge taken is the swarm's state
    s.startDigest = sha256Hex(params.data(), params.size() * sizeof(float));
    for (std::size_t i = 0; i < params.size(); ++i)
        params[i] -= config.learningRate * gradient[i];
    s.epoch = epoch;
    s.appliedAt = unixNow();
    s.leaving = stopFlag.load();
    s.paramsDigest = sha256Hex(params.data(), params.size() * sizeof(float));
    steps.push_back(std::move(s));
    ++epoch;
    samples = 0;
    service->setState(std::make_shared<StateSnapshot>(StateSnapshot{epoch, params}));
}

// Without a complete round (no group, or a part of the round lost): the merge the members of
// the epoch's groups apply, as a trainer takes it (GroupMerger::adopt), instead of its own gradient.
void SimPeer::Impl::adoptMerge(long at, std::vector<float> &gradient, SimStep &s, const GroupInfo &round)
{
    auto m = merger->adopt(
        at, config.elements, [this, at] { return expectedPeers(at, true); }, stopFlag, round, lastRoundSeconds);
    if (!m.note.empty())
        log::warning("sim", identity.peerId().substr(0, 8) + ": " + m.note);
    if (m.average.size() != gradient.size())
        return;
    gradient = std::move(m.average);
    s.mergedGroups = m.groups;
    s.mergedPeers = m.peers;
    s.adopted = true;
}

void SimPeer::Impl::step(std::future<std::optional<FormedGroup>> &search, std::atomic<bool> &cancel, double decidedAt)
{
    long at, weight;
    {
        std::lock_guard lock(mutex);
        at = epoch;
        weight = samples;
    }
    std::optional<FormedGroup> group;
    if (search.valid()) {
        // As a trainer does: once the swarm is past this epoch, the search is given up.
        while (search.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
            bool past;
            {
                std::lock_guard lock(mutex);
                past = tracker.global(unixNow(), at).globalEpoch > at;
            }
            if (past && !merger->groupsStillRunning(at))
                cancel = true;
        }
        group = search.get();
        cancel = false;
        std::lock_guard lock(mutex);
        if (!group && tracker.global(unixNow(), at).globalEpoch > at)
            return; // overtaken: resynchronise instead of stepping alone
    }
    auto gradient = syntheticGradient(config.elements, config.seed, at);
    SimStep s;
    s.decidedAt = decidedAt;
    if (group) {
        AllReduceOptions o;
        o.codec = config.codec;
        o.myWeight = static_cast<double>(weight);
        o.maxWeight = 2.0 * static_cast<double>(config.targetBatchSize);
        std::vector<EncodedPiece> captured;
        o.capture = &captured;
        const double started = unixNow();
        const auto report = allReduce->run(group->info.groupId, group->info.members, group->myIndex, gradient, o);
        s.groupSize = group->info.members.size();
        s.complete = report.complete;
        s.mergedPeers = s.groupSize;
        const long batch = report.groupWeight > 0 ? std::llround(report.groupWeight) : weight;
        if (report.complete)
            if (auto u = assembleUpdate(at, batch, resultCodec(o.codec), gradient.size(), std::move(captured))) {
                auto own = std::make_shared<const AveragedUpdate>(std::move(*u));
                lastRoundSeconds = unixNow() - started;
                auto m = merger->merge(
                    group->info, own, [this, at] { return expectedPeers(at, true); }, lastRoundSeconds, stopFlag);
                if (!m.note.empty())
                    log::warning("sim", identity.peerId().substr(0, 8) + ": " + m.note);
                if (!m.average.empty()) {
                    gradient = std::move(m.average);
                    s.mergedGroups = m.groups;
                    s.mergedPeers = m.peers;
                }
            }
    }
    if (!s.complete)
        adoptMerge(at, gradient, s, group ? group->info : GroupInfo{});
    apply(std::move(gradient), std::move(s));
}

void SimPeer::Impl::workerLoop()
{
    std::future<std::optional<FormedGroup>> search;
    std::atomic<bool> cancel{false}, formed{false};
    long searchEpoch = -1;
    while (!stopFlag.load()) {
        const double now = unixNow();
        StepDecision decision;
        bool matchSoon;
        long at, global;
        {
            std::lock_guard lock(mutex);
            decision = tracker.decide(epoch, now);
            matchSoon = tracker.shouldStartMatchmaking(epoch, now);
            at = epoch;
            global = tracker.global(now, epoch).globalEpoch;
        }
        if (search.valid() && searchEpoch != at) {
            cancel = true;
            search.wait();
            search = {};
            cancel = false;
        }
        // A group formed for this epoch waits for this peer's part: its round comes first. While
        // other groups of this epoch still run, the search for one goes on.
        if (decision == StepDecision::Resync && search.valid() && formed.load())
            decision = StepDecision::Step;
        if (decision == StepDecision::Resync && search.valid() && merger->groupsStillRunning(at)) {
            sleepSeconds(0.05);
            continue;
        }
        if (decision == StepDecision::Resync) {
            resync(global);
            continue;
        }
        checkAgreement();
        if (!search.valid() && (matchSoon || decision == StepDecision::Step) && expectedPeers(at) > 1) {
            searchEpoch = at;
            formed = false;
            search = std::async(std::launch::async, [this, at, &cancel, &formed] {
                auto g = matchmaker->formGroup(at, "sim", [this, at] { return expectedPeers(at); }, cancel);
                if (g)
                    merger->announce(g->info); // at once: the epoch's other groups wait for it
                formed = g.has_value();
                return g;
            });
        }
        if (decision == StepDecision::Step) {
            step(search, cancel, now);
            search = {};
            continue;
        }
        sleepSeconds(config.microBatch / config.samplesPerSecond);
        std::lock_guard lock(mutex);
        samples += config.microBatch;
    }
    if (search.valid()) {
        cancel = true;
        search.wait();
    }
}

SimPeer::SimPeer(SimPeerConfig config) : d(std::make_unique<Impl>(std::move(config)))
{
    auto &c = d->config;
    TrackerOptions t;
    t.targetBatchSize = c.targetBatchSize;
    t.matchmakingTime = c.matchmaking.window;
    t.selfId = d->identity.peerId();
    d->tracker = ProgressTracker(t);
    d->exchange.emplace(c.runId, d->identity.peerId(), c.shardCapacity, 3 * c.progressPeriod + 5);
    d->params.assign(c.elements, 0.0F);
    d->dht = std::make_unique<DhtNode>(d->identity);
    if (!c.bootstrap.empty())
        d->dht->bootstrap(c.bootstrap);
}

SimPeer::~SimPeer() { stop(); }

void SimPeer::start()
{
    if (d->worker.joinable())
        return;
    // The sockets besides the DHT node's are made here, not in the constructor: see SimPeer.h.
    auto &c = d->config;
    if (!d->service) {
        d->service = std::make_unique<PeerService>(c.runId);
        d->service->setState(std::make_shared<StateSnapshot>(StateSnapshot{0, d->params}));
        d->allReduce = std::make_unique<AllReduceEndpoint>(true);
        const MatchSelf self{d->identity.peerId(), c.runId, d->allReduce->endpoint(), -1.0, false, true,
                             d->identity.publicKey()};
        d->matchmaker = std::make_unique<Matchmaker>(*d->dht, d->service.get(), self, c.matchmaking);
        MergeOptions m;
        m.fetchTimeout = c.matchmaking.requestTimeout;
        m.maxGroupWeight = 2.0 * static_cast<double>(c.targetBatchSize);
        m.targetGroupSize = c.matchmaking.targetGroupSize;
        d->merger = std::make_unique<GroupMerger>(*d->dht, d->service.get(), MergeSelf{d->identity.peerId(), c.runId}, m);
    }
    d->stopFlag = false;
    d->control = std::thread([this] { d->controlLoop(); });
    d->worker = std::thread([this] { d->workerLoop(); });
}

void SimPeer::requestStop()
{
    d->stopFlag = true;
}

void SimPeer::stop()
{
    d->stopFlag = true;
    for (auto *t : {&d->worker, &d->control})
        if (t->joinable())
            t->join();
}

const std::string &SimPeer::peerId() const { return d->identity.peerId(); }
std::uint16_t SimPeer::dhtPort() const { return d->dht->port(); }
DhtNode::RecordTraffic SimPeer::dhtTraffic() const { return d->dht->recordTraffic(); }

long SimPeer::epoch() const
{
    std::lock_guard lock(d->mutex);
    return d->epoch;
}

std::vector<SimStep> SimPeer::steps() const
{
    std::lock_guard lock(d->mutex);
    return d->steps;
}

long SimPeer::stateDownloads() const
{
    std::lock_guard lock(d->mutex);
    return d->downloads;
}

SimPeer::ProgressReads SimPeer::progressReads() const
{
    std::lock_guard lock(d->mutex);
    return d->reads;
}

} // namespace dedloc::sim
