#include "swarm/SwarmPeer.h"

#include "model/Tokenizer.h"
#include "net/DhtNode.h"
#include "net/PeerIdentity.h"
#include "run/RunManifest.h"
#include "swarm/ButterflyAllReduce.h"
#include "swarm/PeerService.h"
#include "swarm/ProgressTracker.h"
#include "swarm/RunAccess.h"
#include "swarm/StateDownload.h"
#include "monitor/CheckpointArchive.h"
#include "swarm/SwarmMonitor.h"
#include "system/TorchRuntime.h"
#include "train/Checkpoint.h"
#include "train/MetricsWriter.h"
#include "train/Trainer.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <condition_variable>
#include <fstream>
#include <future>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

namespace dedloc {

namespace {

double unixNow()
{
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::uint64_t seedFromPeerId(const std::string &peerId)
{
    // Each peer shuffles with a seed from its key, as in the sahajBERT run.
    return std::stoull(peerId.substr(0, 16), nullptr, 16);
}

constexpr std::size_t LossHistoryLength = 512;

} // namespace

struct SwarmPeer::Impl {
    SwarmOptions opt;
    double started = 0.0;

    // --- shared between threads
    mutable std::mutex mutex;
    PeerSnapshot snap;
    ProgressRecord myRecord;           // what the control thread publishes
    std::optional<std::string> pendingMetrics;
    std::optional<DonorAdvert> donorAdvert;
    ProgressTracker tracker{TrackerOptions{}};
    std::atomic<bool> stopFlag{false};
    std::atomic<bool> pausedFlag{false};
    std::atomic<bool> workerDone{false};
    std::atomic<int> exitCode{0};
    std::atomic<std::uint16_t> dhtPort{0};
    std::atomic<bool> firstFetchDone{false};
    std::condition_variable wake;
    std::mutex wakeMutex;
    std::thread worker;
    std::thread control;
    ResourceCaps caps;
    bool capsChanged = false;
    mutable TokenBucket upload;    // the upload cap of every round (rate 0: none)
    mutable TokenBucket download;  // the download cap of every round (rate 0: none)

    // --- owned by the worker thread (the control thread only uses dht, which is thread-safe)
    std::optional<RunManifest> manifest;
    std::unique_ptr<Tokenizer> tokenizer;
    std::optional<PeerIdentity> identity;
    RunAccess access;                  // data-plane security (thread-safe) and our own token
    std::unique_ptr<Trainer> trainer;
    std::unique_ptr<DhtNode> dht;
    std::unique_ptr<PeerService> service;
    std::unique_ptr<AllReduceEndpoint> allReduce;
    std::unique_ptr<Matchmaker> matchmaker;
    std::unique_ptr<MetricsWriter> metrics;
    std::shared_ptr<SwarmMetricsRecorder> recorder;
    std::filesystem::path checkpointDir;
    std::string gradientSchema, stateSchema;
    double emaSamplesPerSecond = 0.0;
    long long sessionSamplesStart = 0;
    double sessionComputeStart = 0.0;
    long sessionStepsStart = 0;
    long long swarmSamplesSeen = 0, mySamplesSeen = 0;
    std::atomic<bool> cancelMatch{false};  // ends the background matchmaking early
    // Fault injection for tests (tst_swarm): DEDLOC_FAULT_STALL_ROUND=<epoch> makes this peer
    // freeze inside its first round at that epoch or later, as a peer that hangs mid-round.
    long faultStallEpoch = std::getenv("DEDLOC_FAULT_STALL_ROUND") ? std::atol(std::getenv("DEDLOC_FAULT_STALL_ROUND")) : -1;

    explicit Impl(SwarmOptions o) : opt(std::move(o)) {}

    bool reachable() const { return !opt.clientMode; }

    template <typename F> void update(F &&f)
    {
        std::lock_guard lock(mutex);
        f(snap);
        ++snap.sequence;
    }

    void setState(PeerState state, const std::string &detail = {})
    {
        update([&](PeerSnapshot &s) {
            // A pause shows until resume(), whatever the worker finishes meanwhile.
            if (pausedFlag.load() && (state == PeerState::Training || state == PeerState::Averaging
                                      || state == PeerState::Syncing))
                return;
            s.state = state;
            s.stateDetail = detail;
        });
    }

    bool timeUp() const
    {
        return opt.durationSeconds > 0 && unixNow() - started >= opt.durationSeconds;
    }

    void sleepFor(double seconds)
    {
        std::unique_lock lock(wakeMutex);
        wake.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return stopFlag.load(); });
    }

    // ------------------------------------------------------------------ set-up

    void setUp()
    {
        setState(PeerState::Connecting);
        configureTorchThreads(opt.threads);
        manifest = loadRunManifest(opt.manifest);
        verifyRunFiles(*manifest);
        tokenizer = std::make_unique<Tokenizer>(manifest->resolve(manifest->tokenizer.path));
        identity = PeerIdentity::loadOrCreate(opt.dataDir / "identity.key");
        // Fault injection for tests (tst_closedrun): DEDLOC_FAULT_IGNORE_TOKEN=1 joins a closed
        // run without a valid token, to prove that the others refuse it at the handshake.
        access = setUpRunAccess(*manifest, *identity, opt.leadKey, opt.dataDir, opt.accessTokenFile,
                                std::getenv("DEDLOC_FAULT_IGNORE_TOKEN") == nullptr);
        TrainerConfig config;
        config.seed = opt.dataSeed ? opt.dataSeed : seedFromPeerId(identity->peerId());
        config.allowCuda = opt.allowCuda && opt.role == PeerRole::Trainer;
        config.microBatchSize = opt.microBatchSize;
        trainer = std::make_unique<Trainer>(*manifest, *tokenizer, config);
        checkpointDir = opt.dataDir / "runs" / manifest->runId;
        if (opt.resume && opt.role != PeerRole::Auxiliary)
            if (auto step = trainer->restoreCheckpoint(checkpointDir))
                log::info("swarm", "continuing from epoch " + std::to_string(*step));
        const auto c = trainer->contribution();
        sessionSamplesStart = c.samples;
        sessionComputeStart = c.computeSeconds;
        sessionStepsStart = c.stepsTakenPart;
        const std::string codec = compressionName(manifest->compression);
        gradientSchema = schemaHash(manifest->runId, trainer->parameterCount(), "grad/" + codec);
        stateSchema = schemaHash(manifest->runId, trainer->stateElements(), "state/" + codec);
        metrics = std::make_unique<MetricsWriter>(opt.metricsOut, identity->peerId(), peerRoleName(opt.role));
        if (opt.role == PeerRole::Monitor)
            recorder = opt.swarmRecorder ? opt.swarmRecorder : std::make_shared<SwarmMetricsRecorder>(opt.swarmMetricsOut);

        TrackerOptions trackerOptions;
        trackerOptions.targetBatchSize = manifest->training.targetBatchSize;
        trackerOptions.matchmakingTime = opt.matchmaking.window;
        {
            std::lock_guard lock(mutex);
            tracker = ProgressTracker(trackerOptions);
        }

        if (reachable() && (opt.host == "0.0.0.0" || opt.host == "*"))
            throw Error("--host " + opt.host + " cannot be advertised to other peers: give an address of this machine "
                        "that they can reach (0.0.0.0 is fine in client mode, which binds no socket but the DHT's)");
        dht = std::make_unique<DhtNode>(*identity, opt.dhtPort, opt.host);
        dhtPort = dht->port();
        for (const auto &b : opt.bootstrap)
            dht->bootstrap(b);
        for (const auto &b : manifest->bootstrapPeers)
            dht->bootstrap(b);
        if ((!opt.bootstrap.empty() || !manifest->bootstrapPeers.empty()) && !dht->waitForNodes(1, 10.0))
            log::warning("swarm", "no DHT node answered within 10 s; training alone until the swarm is reachable");
        if (reachable()) {
            service = std::make_unique<PeerService>(manifest->runId, "tcp://" + opt.host + ":*", 128 * 1024,
                                                    access.security);
            service->setState(std::make_shared<StateSnapshot>(StateSnapshot{trainer->step(), trainer->stateFlat()}));
        }
        allReduce = std::make_unique<AllReduceEndpoint>(reachable(), "tcp://" + opt.host + ":*", access.security);
        MatchSelf self{identity->peerId(), manifest->runId, allReduce->endpoint(), opt.bandwidth, opt.clientMode,
                       opt.role == PeerRole::Trainer, identity->publicKey()};
        matchmaker = std::make_unique<Matchmaker>(*dht, service.get(), self, opt.matchmaking, access.security);

        update([&](PeerSnapshot &s) {
            s.role = opt.role;
            s.peerId = identity->peerId();
            s.runId = manifest->runId;
            s.runName = manifest->name;
            s.deviceName = trainer->deviceName();
            s.localEpoch = trainer->step();
            s.targetBatchSize = manifest->training.targetBatchSize;
            s.allTime = {c.samples, c.computeSeconds, c.stepsTakenPart};
        });
        setMyRecord(0, 0.0);
        log::info("swarm", std::string(peerRoleName(opt.role)) + " " + identity->peerId().substr(0, 16) + " on DHT port "
                               + std::to_string(dht->port())
                               + (reachable() ? ", service " + service->endpoint() + ", all-reduce " + allReduce->endpoint()
                                              : std::string(", client mode")));
        control = std::thread([this] { controlLoop(); });
        // Give the first progress read a moment, so that a joiner sees the swarm's epoch.
        for (int i = 0; i < 50 && !firstFetchDone.load() && !stopFlag.load(); ++i)
            sleepFor(0.1);
    }

    void setMyRecord(long samples, double samplesPerSecond)
    {
        ProgressRecord r;
        r.peerId = identity->peerId();
        r.epoch = trainer->step();
        r.samplesAccumulated = pausedFlag ? 0 : samples;
        r.samplesPerSecond = pausedFlag ? 0.0 : samplesPerSecond;
        r.time = unixNow();
        r.expiresAt = r.time + std::max(10.0, 5 * opt.progressPeriod);
        r.clientMode = opt.clientMode;
        r.role = opt.role;
        r.paused = pausedFlag;
        r.accessToken = access.ownToken;
        std::lock_guard lock(mutex);
        if (opt.role == PeerRole::Auxiliary)
            r.epoch = snap.globalEpoch;
        myRecord = r;
        tracker.update(r, r.time); // our own count is exact, not extrapolated from a report
    }

    // ------------------------------------------------------------------ control thread

    void controlLoop()
    {
        long round = 0;
        while (!stopFlag.load() && !workerDone.load()) {
            ProgressRecord mine;
            std::optional<std::string> metricsPayload;
            std::optional<DonorAdvert> advert;
            {
                std::lock_guard lock(mutex);
                mine = myRecord;
                metricsPayload.swap(pendingMetrics);
                advert = donorAdvert;
            }
            const double ttl = std::max(10.0, 5 * opt.progressPeriod);
            if (!mine.peerId.empty())
                dht->publish(runKey(manifest->runId, "progress"), encodeProgress(mine), ttl, 2.0);
            if (metricsPayload)
                dht->publish(runKey(manifest->runId, "metrics"), *metricsPayload, 120.0, 2.0);
            if (advert && round % 3 == 0)
                dht->publish(runKey(manifest->runId, "donors"), encodeDonorAdvert(*advert), 30.0, 2.0);
            readProgress();
            if (recorder) {
                auto records = dht->fetch(runKey(manifest->runId, "metrics"), 2.0);
                // Closed run: only admitted peers' metrics are recorded.
                std::erase_if(records, [&](const SignedRecord &r) {
                    return r.peerId != identity->peerId() && !access.security->admission(r.publicKey).empty();
                });
                recorder->record(records);
            }
            firstFetchDone = true;
            ++round;
            sleepFor(opt.progressPeriod);
        }
        // The worker ended (last step, --duration, Ctrl-C): publish its final epoch and the
        // metrics of its last step, which the loop above may not have had a round for.
        ProgressRecord mine;
        std::optional<std::string> metricsPayload;
        {
            std::lock_guard lock(mutex);
            mine = myRecord;
            metricsPayload.swap(pendingMetrics);
        }
        if (!mine.peerId.empty())
            dht->publish(runKey(manifest->runId, "progress"), encodeProgress(mine), std::max(10.0, 5 * opt.progressPeriod), 1.0);
        if (metricsPayload)
            dht->publish(runKey(manifest->runId, "metrics"), *metricsPayload, 120.0, 1.0);
    }

    void readProgress()
    {
        const auto records = dht->fetch(runKey(manifest->runId, "progress"), 2.0);
        const double now = unixNow();
        std::vector<ProgressRecord> admitted;
        for (const auto &record : records) {
            if (record.peerId == identity->peerId())
                continue;
            try {
                auto r = parseProgress(record);
                // Closed run: a peer without a valid token neither counts toward the batch nor
                // gets through our handshakes; one with a token is admitted from now on.
                if (access.security->admitRecord(record.publicKey, r.accessToken))
                    admitted.push_back(std::move(r));
            } catch (const std::exception &e) {
                log::warning("swarm", "ignored a progress record of " + record.peerId.substr(0, 8) + ": " + e.what());
            }
        }
        std::lock_guard lock(mutex);
        for (const auto &r : admitted)
            tracker.update(r, now);
        refreshSwarmView(now);
    }

    // Under `mutex`.
    void refreshSwarmView(double now)
    {
        const auto g = tracker.global(now);
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
                                  r.samplesPerSecond, now - r.time});
        };
        // From the tracker, not from this read alone: a DHT read may miss a record that is
        // still live (OpenDHT answers with what it found in time).
        count(myRecord);
        for (const auto &r : tracker.liveRecords(now))
            if (r.peerId != identity->peerId())
                count(r);
        ++snap.sequence;
    }

    // Peers (this one included) that will average at `epoch`: live, unpaused trainers at that
    // epoch or up to ExpectedLag behind it, and live auxiliaries (they follow the global epoch,
    // which they may observe a progress period late). A leader forms its group early once all
    // of them joined (swarm/Matchmaker.h), so counting one too few drops a peer from the step
    // (it must resync), while counting one too many only costs waiting to the deadline: the
    // count errs on the high side. Records lag by a progress period plus DHT latency, which
    // may span several steps when steps take a second (tests) rather than minutes (real runs).
    static constexpr long ExpectedLag = 3;
    std::size_t expectedPeers(long epoch)
    {
        std::lock_guard lock(mutex);
        std::size_t n = 1;
        for (const auto &p : snap.peers)
            if (p.peerId != identity->peerId() && !p.paused && p.role != PeerRole::Monitor
                && ((p.epoch <= epoch && p.epoch >= epoch - ExpectedLag) || p.role == PeerRole::Auxiliary)
                && p.secondsSinceReport < 3 * opt.progressPeriod + 5)
                ++n;
        return n;
    }

    // ------------------------------------------------------------------ state sharing

    bool syncState(long minEpoch)
    {
        setState(PeerState::Syncing, "downloading state of epoch " + std::to_string(minEpoch) + " or later");
        auto donors = rankDonors(fetchDonors(*dht, manifest->runId, identity->peerId()), minEpoch);
        std::string why;
        auto s = downloadState(donors, manifest->runId, minEpoch, static_cast<std::uint64_t>(trainer->stateElements()),
                               {}, stopFlag, &why, access.security);
        if (!s) {
            log::warning("state", "state download failed: " + why);
            setState(PeerState::Syncing, "waiting for a state donor: " + why);
            return false;
        }
        trainer->loadStateFlat(s->values, s->epoch);
        afterStateChange();
        return true;
    }

    void afterStateChange()
    {
        if (service) {
            service->setState(std::make_shared<StateSnapshot>(StateSnapshot{trainer->step(), trainer->stateFlat()}));
            std::lock_guard lock(mutex);
            donorAdvert = DonorAdvert{identity->peerId(), service->endpoint(), trainer->step()};
        }
        update([&](PeerSnapshot &s) { s.localEpoch = trainer->step(); });
    }

    // ------------------------------------------------------------------ rounds

    AllReduceOptions roundOptions() const
    {
        AllReduceOptions o;
        o.codec = manifest->compression;
        o.senderTimeout = opt.senderTimeout;
        o.reducerTimeout = opt.reducerTimeout;
        o.upload = &upload;
        o.download = &download;
        return o;
    }

    bool averageStateNow(long epoch) const
    {
        return opt.averageStateEvery > 0 && (epoch + 1) % opt.averageStateEvery == 0;
    }

    void averageState(const FormedGroup &group)
    {
        // Parameters and LAMB statistics, equal weights (every trainer holds one copy).
        auto state = opt.role == PeerRole::Trainer ? trainer->stateFlat()
                                                   : std::vector<float>(static_cast<std::size_t>(trainer->stateElements()));
        auto o = roundOptions();
        o.codec = Compression::None; // state is averaged exactly: equal states stay equal
        const auto report = allReduce->run(group.info.groupId + "/state", group.info.members, group.myIndex, state, o);
        if (opt.role == PeerRole::Trainer) {
            trainer->loadStateFlat(state, trainer->step());
            afterStateChange();
        }
        log::info("swarm", "averaged parameters and optimizer state with " + std::to_string(group.info.members.size())
                               + " peers" + (report.complete ? "" : " (incomplete)"));
    }

    // ------------------------------------------------------------------ roles

    void runTrainer()
    {
        const long lastEpoch = opt.maxEpoch > 0 ? opt.maxEpoch : manifest->schedule.totalSteps;
        const auto &t = manifest->training;
        const long checkpointEvery = opt.checkpointEvery > 0 ? opt.checkpointEvery : t.checkpointEveryNSteps;
        afterStateChange();
        std::future<std::optional<FormedGroup>> match;
        std::string matchWhy;
        long matchEpoch = -1;
        auto dropMatch = [&] {
            if (match.valid()) {
                cancelMatch = true;
                match.wait();
                match = {};
                cancelMatch = false;
            }
            matchEpoch = -1;
        };
        auto startMatch = [&](long epoch) {
            matchEpoch = epoch;
            cancelMatch = false;
            match = std::async(std::launch::async, [this, epoch, &matchWhy] {
                return matchmaker->formGroup(epoch, gradientSchema, [this, epoch] { return expectedPeers(epoch); },
                                             cancelMatch, &matchWhy);
            });
        };
        long stepsSinceCheckpoint = 0;
        double lastSyncAttempt = -1e9;
        bool wasPaused = false;
        setState(PeerState::Training);
        while (!stopFlag.load() && trainer->step() < lastEpoch && !timeUp()) {
            if (pausedFlag.load()) {
                if (!wasPaused) {
                    dropMatch();
                    releaseAcceleratorMemory();
                    wasPaused = true;
                }
                setMyRecord(0, 0.0);
                sleepFor(0.1);
                continue;
            }
            if (wasPaused) {
                wasPaused = false;
                setState(PeerState::Training);
            }
            applyCaps();
            const double now = unixNow();
            setMyRecord(trainer->accumulatedSamples(), emaSamplesPerSecond);
            StepDecision decision;
            bool matchSoon;
            std::size_t expected;
            {
                std::lock_guard lock(mutex);
                decision = tracker.decide(trainer->step(), now);
                matchSoon = tracker.shouldStartMatchmaking(trainer->step(), now);
            }
            expected = expectedPeers(trainer->step());
            if (decision == StepDecision::Resync) {
                dropMatch();
                long global;
                {
                    std::lock_guard lock(mutex);
                    global = tracker.global(now).globalEpoch;
                }
                if (now - lastSyncAttempt < 2.0) {
                    sleepFor(0.2);
                    continue;
                }
                lastSyncAttempt = now;
                if (syncState(global))
                    setState(PeerState::Training);
                continue;
            }
            if (expected < opt.minPeers) {
                // Neither compute nor step before the peers this run asks for are here: samples
                // computed alone would make up the whole batch before the others arrive.
                sleepFor(0.05);
                continue;
            }
            const bool alone = expected <= 1;
            if (!alone && !match.valid() && (matchSoon || decision == StepDecision::Step))
                startMatch(trainer->step());
            if (decision == StepDecision::Step) {
                takeStep(match, matchEpoch, matchWhy, alone);
                match = {};
                matchEpoch = -1;
                if (++stepsSinceCheckpoint >= checkpointEvery) {
                    trySave();
                    stepsSinceCheckpoint = 0;
                }
                if (t.validationEveryNSteps > 0 && trainer->step() % t.validationEveryNSteps == 0)
                    validate();
                setState(PeerState::Training);
                continue;
            }
            const int fullMicroBatch = trainer->microBatchSize();
            const auto r = trainer->accumulateMicroBatch(fittedMicroBatch(now, fullMicroBatch));
            // Only full micro-batches update the throughput: a fitted one pays the same fixed
            // cost per call for fewer samples and would drag the estimate (and the ETA) down.
            const double rate = r.seconds > 0 ? r.samples / r.seconds : 0.0;
            if (r.samples >= fullMicroBatch || emaSamplesPerSecond == 0.0)
                emaSamplesPerSecond = emaSamplesPerSecond == 0.0 ? rate : 0.9 * emaSamplesPerSecond + 0.1 * rate;
            const auto c = trainer->contribution();
            update([&](PeerSnapshot &s) {
                s.localSamplesPerSecond = emaSamplesPerSecond;
                s.session = {c.samples - sessionSamplesStart, c.computeSeconds - sessionComputeStart,
                             c.stepsTakenPart - sessionStepsStart};
                s.allTime = {c.samples, c.computeSeconds, c.stepsTakenPart};
            });
        }
        dropMatch();
        if (stepsSinceCheckpoint > 0)
            trySave();
        setMyRecord(0, 0.0); // the final epoch, for the control thread's last publish
    }

    // The next micro-batch, cut to end by the global batch's ETA (swarm/ProgressTracker.h
    // fitMicroBatch) so that every peer reaches the step within a small micro-batch of the others.
    int fittedMicroBatch(double now, int fullMicroBatch)
    {
        double eta;
        {
            std::lock_guard lock(mutex);
            const auto g = tracker.global(now);
            if (g.globalEpoch != trainer->step())
                return fullMicroBatch;
            eta = g.eta;
        }
        return fitMicroBatch(eta, emaSamplesPerSecond, fullMicroBatch);
    }

    void takeStep(std::future<std::optional<FormedGroup>> &match, long matchEpoch, const std::string &matchWhy, bool alone)
    {
        const long epoch = trainer->step();
        const long localSamples = trainer->accumulatedSamples();
        setState(PeerState::Averaging, "global step " + std::to_string(epoch + 1));
        std::optional<FormedGroup> group;
        std::string why = alone ? "no other peer at this epoch" : matchWhy;
        if (match.valid() && matchEpoch == epoch) {
            // While the group forms, the others may step without us (we came too late): then
            // stop looking at once and resynchronise instead of waiting out the deadlines.
            bool overtaken = false;
            while (match.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
                std::lock_guard lock(mutex);
                if (tracker.global(unixNow()).globalEpoch > epoch)
                    overtaken = cancelMatch = true;
            }
            group = match.get();
            why = matchWhy;
            if (!group && overtaken) {
                // The swarm stepped without us: a local step would only diverge. Resync instead
                // (the next decision says so); the samples computed here are dropped.
                log::info("swarm", "the swarm stepped past epoch " + std::to_string(epoch) + " without this peer; resynchronising");
                setState(PeerState::Training);
                return;
            }
        }
        const auto roundStart = std::chrono::steady_clock::now();
        StepResult result;
        std::string status;
        std::size_t groupSize = 1;
        std::int64_t shardElements = 0;
        bool averaged = false;
        bool complete = false;
        if (group && faultStallEpoch >= 0 && epoch >= faultStallEpoch) {
            log::warning("swarm", "FAULT: stalling in round " + group->info.groupId + " (DEDLOC_FAULT_STALL_ROUND)");
            while (!stopFlag.load())
                sleepFor(0.5);
        }
        if (group) {
            auto gradient = trainer->meanGradientFlat();
            auto o = roundOptions();
            o.myWeight = static_cast<double>(localSamples);
            const auto report = allReduce->run(group->info.groupId, group->info.members, group->myIndex, gradient, o);
            const long batch = report.groupWeight > 0 ? static_cast<long>(std::llround(report.groupWeight)) : localSamples;
            result = trainer->applyAveragedStep(gradient, batch);
            groupSize = group->info.members.size();
            shardElements = report.shardSizes[group->myIndex];
            averaged = true;
            complete = report.complete;
            status = "averaged with " + std::to_string(groupSize - 1) + " peer(s)"
                     + (report.complete ? "" : " (partial: " + std::to_string(static_cast<int>(report.receivedFraction * 100))
                                                   + "% of results)");
            if (averageStateNow(epoch))
                averageState(*group);
            std::lock_guard lock(mutex);
            swarmSamplesSeen += batch;
            mySamplesSeen += localSamples;
        } else if (localSamples == 0) {
            // Nothing computed here and nobody to average with (e.g. just after a state
            // download): no step; the tracker says Resync once the others have stepped.
            setState(PeerState::Training);
            sleepFor(0.1);
            return;
        } else {
            result = trainer->applyStep();
            status = "fell back to local gradients: " + why;
            if (!alone)
                log::warning("swarm", status);
            std::lock_guard lock(mutex);
            swarmSamplesSeen += localSamples;
            mySamplesSeen += localSamples;
        }
        const double roundSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - roundStart).count();
        afterStateChange();
        reportStep(result, localSamples, groupSize, shardElements, averaged, complete, roundSeconds, status);
    }

    void reportStep(const StepResult &r, long localSamples, std::size_t groupSize, std::int64_t shardElements,
                    bool averaged, bool complete, double roundSeconds, const std::string &status)
    {
        long globalEpoch;
        int peers;
        {
            std::lock_guard lock(mutex);
            globalEpoch = std::max(snap.globalEpoch, r.step);
            peers = static_cast<int>(snap.peers.size());
        }
        // A peer that computed nothing for this step (it just downloaded the state and the
        // group formed before its first micro-batch) has no loss of its own to report.
        const bool hasLoss = localSamples > 0;
        nlohmann::json fields = {{"step", r.step}, {"samples", localSamples}, {"batch_samples", r.samples},
                                 {"samples_per_s", emaSamplesPerSecond}, {"lr", r.learningRate},
                                 {"grad_norm", std::isfinite(r.gradNorm) ? r.gradNorm : -1.0}, {"applied", r.applied},
                                 {"global_epoch", globalEpoch}, {"peers", peers}, {"group_size", groupSize},
                                 {"averaged", averaged}, {"round_s", roundSeconds}, {"shard_elements", shardElements},
                                 {"complete", complete}};
        if (hasLoss)
            fields["loss"] = r.loss;
        if (opt.hashParameters) {
            const auto p = trainer->parametersFlat();
            fields["params_sha"] = sha256Hex(p.data(), p.size() * sizeof(float));
        }
        metrics->write("step", fields);
        auto published = fields;
        published["peer_id"] = identity->peerId();
        published["name"] = opt.name;
        published["role"] = peerRoleName(opt.role);
        published["time"] = unixNow();
        const auto c = trainer->contribution();
        update([&](PeerSnapshot &s) {
            s.localEpoch = r.step;
            if (hasLoss) {
                s.lastLoss = r.loss;
                s.lossHistory.push_back({r.step, r.loss});
                if (s.lossHistory.size() > LossHistoryLength)
                    s.lossHistory.erase(s.lossHistory.begin());
            }
            s.lastRoundStatus = status;
            s.session = {c.samples - sessionSamplesStart, c.computeSeconds - sessionComputeStart,
                         c.stepsTakenPart - sessionStepsStart};
            s.allTime = {c.samples, c.computeSeconds, c.stepsTakenPart};
            s.shareOfSwarm = swarmSamplesSeen > 0 ? static_cast<double>(mySamplesSeen) / static_cast<double>(swarmSamplesSeen) : 0.0;
            pendingMetrics = published.dump();
        });
        if (opt.statusOut) {
            char loss[32] = "  none";
            if (hasLoss)
                std::snprintf(loss, sizeof loss, "%.4f", r.loss);
            std::fprintf(opt.statusOut, "%s step %5ld | loss %s | %6.1f samples/s | peers %d | %s%s\n",
                         opt.name.empty() ? "" : ("[" + opt.name + "]").c_str(), r.step, loss, emaSamplesPerSecond, peers,
                         status.c_str(), r.applied ? "" : " | SKIPPED (non-finite)");
            std::fflush(opt.statusOut);
        }
    }

    void validate()
    {
        const double v = trainer->validationLoss();
        if (opt.statusOut) {
            std::fprintf(opt.statusOut, "%s step %5ld | validation loss %.4f\n",
                         opt.name.empty() ? "" : ("[" + opt.name + "]").c_str(), trainer->step(), v);
            std::fflush(opt.statusOut);
        }
        metrics->write("validation", {{"step", trainer->step()}, {"val_loss", v}});
    }

    bool trySave()
    {
        try {
            trainer->saveCheckpoint(checkpointDir);
            return true;
        } catch (const Error &e) {
            log::error("ckpt", std::string("checkpoint not saved: ") + e.what() + "; training continues");
            return false;
        }
    }

    // Monitor: a copy of the checkpoint just saved, per epoch, the oldest beyond the limit removed.
    void archiveCheckpoint()
    {
        if (opt.checkpointArchive.empty())
            return;
        try {
            const auto file = CheckpointArchive(opt.checkpointArchive, opt.keepCheckpoints)
                                  .add(CheckpointStore(checkpointDir).newestPath(), trainer->step());
            log::info("ckpt", "kept the state of epoch " + std::to_string(trainer->step()) + " as " + file.string());
        } catch (const Error &e) {
            log::error("ckpt", std::string("checkpoint not archived: ") + e.what() + "; the monitor goes on");
        }
    }

    void applyCaps()
    {
        ResourceCaps c;
        {
            std::lock_guard lock(mutex);
            if (!capsChanged)
                return;
            c = caps;
            capsChanged = false;
        }
        if (c.cpuThreads > 0)
            configureTorchThreads(c.cpuThreads);
        if (c.microBatchSize > 0)
            trainer->setMicroBatchSize(c.microBatchSize);
        upload.setRate(std::max(0.0, c.uploadBytesPerSecond));
        download.setRate(std::max(0.0, c.downloadBytesPerSecond));
        if (c.gpuMemoryFraction > 0.0)
            setAcceleratorMemoryFraction(std::min(1.0, c.gpuMemoryFraction));
    }

    void runAuxiliary()
    {
        setState(PeerState::Training, "auxiliary: averaging only");
        long doneEpoch = -1;
        while (!stopFlag.load() && !timeUp()) {
            if (pausedFlag.load()) {
                setMyRecord(0, 0.0);
                sleepFor(0.1);
                continue;
            }
            const double now = unixNow();
            setMyRecord(0, 0.0);
            long global;
            bool soon;
            {
                std::lock_guard lock(mutex);
                global = tracker.global(now).globalEpoch;
                soon = tracker.shouldStartMatchmaking(global, now) || tracker.decide(global, now) == StepDecision::Step;
            }
            if (global <= doneEpoch || !soon || expectedPeers(global) < 2) {
                sleepFor(0.05);
                continue;
            }
            setState(PeerState::Averaging, "helping global step " + std::to_string(global + 1));
            // Looking for a group of an epoch the swarm has already left is pointless: stop
            // as soon as the global epoch moves on, and look for the current one instead.
            std::string why;
            std::atomic<bool> cancel{false};
            auto search = std::async(std::launch::async, [&] {
                return matchmaker->formGroup(global, gradientSchema, [this, global] { return expectedPeers(global); },
                                             cancel, &why);
            });
            while (search.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
                std::lock_guard lock(mutex);
                if (stopFlag.load() || tracker.global(unixNow()).globalEpoch > global)
                    cancel = true;
            }
            auto group = search.get();
            if (group) {
                std::vector<float> values(static_cast<std::size_t>(trainer->parameterCount()));
                auto o = roundOptions();
                o.myWeight = 0.0;
                const auto report = allReduce->run(group->info.groupId, group->info.members, group->myIndex, values, o);
                if (averageStateNow(global))
                    averageState(*group);
                metrics->write("round", {{"step", global + 1}, {"group_size", group->info.members.size()},
                                         {"shard_elements", report.shardSizes[group->myIndex]},
                                         {"shard_weight", report.myShardWeight}, {"complete", report.complete}});
                update([&](PeerSnapshot &s) {
                    ++s.session.stepsTakenPart;
                    s.lastRoundStatus = "reduced a shard for " + std::to_string(group->info.members.size() - 1) + " peer(s)";
                });
            }
            doneEpoch = global;
            setState(PeerState::Training, "auxiliary: averaging only");
        }
    }

    void runMonitor()
    {
        setState(PeerState::Training, "monitor: recording metrics, keeping the latest state");
        afterStateChange();
        while (!stopFlag.load() && !timeUp()) {
            long global;
            {
                std::lock_guard lock(mutex);
                global = tracker.global(unixNow()).globalEpoch;
            }
            setMyRecord(0, 0.0);
            if (global >= trainer->step() + std::max(1L, opt.monitorStateEvery)) {
                auto donors = rankDonors(fetchDonors(*dht, manifest->runId, identity->peerId()), trainer->step() + 1);
                std::string why;
                if (auto s = downloadState(donors, manifest->runId, trainer->step() + 1,
                                           static_cast<std::uint64_t>(trainer->stateElements()), {}, stopFlag, &why,
                                           access.security)) {
                    trainer->loadStateFlat(s->values, s->epoch);
                    afterStateChange();
                    if (trySave())
                        archiveCheckpoint();
                } else {
                    log::info("monitor", "state not refreshed: " + why);
                }
            }
            sleepFor(0.5);
        }
    }

    void releaseAcceleratorMemory() { dedloc::releaseAcceleratorMemory(); }

    void run()
    {
        started = unixNow();
        try {
            setUp();
            if (!stopFlag.load()) {
                switch (opt.role) {
                case PeerRole::Trainer: runTrainer(); break;
                case PeerRole::Auxiliary: runAuxiliary(); break;
                case PeerRole::Monitor: runMonitor(); break;
                }
            }
            if (trainer && !opt.dumpParameters.empty()) {
                const auto p = trainer->parametersFlat();
                std::ofstream out(opt.dumpParameters, std::ios::binary);
                out.write(reinterpret_cast<const char *>(p.data()), static_cast<std::streamsize>(p.size() * sizeof(float)));
            }
            setState(PeerState::Stopped);
            exitCode = 0;
        } catch (const Error &e) {
            log::error("swarm", e.what());
            const bool accessProblem = std::string_view(e.what()).starts_with("this run is closed");
            setState(PeerState::Error, std::string(e.what())
                                           + (accessProblem ? "" : " — check the run files and the data directory, then join again"));
            exitCode = 2;
        } catch (const std::exception &e) {
            log::error("swarm", std::string("unexpected failure: ") + e.what());
            setState(PeerState::Error, std::string(e.what()) + " — please report this with the log");
            exitCode = 1;
        }
        workerDone = true;
        wake.notify_all();
        if (control.joinable())
            control.join();
    }
};

SwarmPeer::SwarmPeer(SwarmOptions options) : d(std::make_unique<Impl>(std::move(options))) {}

SwarmPeer::~SwarmPeer() { stop(); }

void SwarmPeer::start()
{
    if (d->worker.joinable())
        return;
    d->worker = std::thread([this] { d->run(); });
}

void SwarmPeer::pause(const std::string &reason)
{
    d->pausedFlag = true;
    d->update([&](PeerSnapshot &s) {
        if (s.state != PeerState::Error && s.state != PeerState::Stopped) {
            s.state = PeerState::Paused;
            s.stateDetail = reason;
        }
    });
}

void SwarmPeer::resume()
{
    if (!d->pausedFlag.exchange(false))
        return;
    d->update([&](PeerSnapshot &s) {
        if (s.state == PeerState::Paused) {
            s.state = PeerState::Training;
            s.stateDetail.clear();
        }
    });
}

void SwarmPeer::stop()
{
    d->stopFlag = true;
    d->wake.notify_all();
    if (d->worker.joinable())
        d->worker.join();
}

void SwarmPeer::setCaps(const ResourceCaps &caps)
{
    std::lock_guard lock(d->mutex);
    d->caps = caps;
    d->capsChanged = true;
}

PeerSnapshot SwarmPeer::snapshot() const
{
    std::lock_guard lock(d->mutex);
    return d->snap;
}

int SwarmPeer::wait()
{
    if (d->worker.joinable())
        d->worker.join();
    return d->exitCode.load();
}

std::uint16_t SwarmPeer::dhtPort() const { return d->dhtPort.load(); }

} // namespace dedloc
