#include "peer/SwarmPeerImpl.h"

#include "net/Announce.h"
#include "averaging/Reachability.h"

#include "run/RunPaths.h"
#include "system/TorchRuntime.h"
#include "train/PeerSetup.h"
#include "util/Error.h"
#include "util/Log.h"

#include <cstdio>
#include <fstream>

namespace dedloc {

namespace {

bool isLoopbackHost(std::string host)
{
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

} // namespace

std::string advertisingProblem(const SwarmOptions &options)
{
    // A DHT node bound to loopback can send nothing to another machine: a bootstrap node there
    // would never answer, and the peer would wait alone.
    if (isLoopbackHost(options.host))
        for (const auto &b : options.bootstrap)
            if (const auto colon = b.rfind(':'); !isLoopbackHost(b.substr(0, colon)))
                return "--bootstrap " + b + " is another machine, but this peer listens on " + options.host
                       + " (--host), which no other machine reaches: give this machine's LAN address with --host "
                         "(or --host 0.0.0.0 --client-mode)";
    const bool reachable = !options.clientMode;
    if (!options.announce.empty() && !reachable)
        return "--announce has no use in client mode: a client-mode peer accepts no connections";
    if (reachable && options.announce.empty() && (options.host == "0.0.0.0" || options.host == "*"))
        return "--host " + options.host + " cannot be advertised to other peers: give an address of this machine "
               "that they can reach (0.0.0.0 is fine in client mode, which binds no socket but the DHT's)";
    return {};
}

void SwarmPeer::Impl::setUp()
{
    setState(PeerState::Connecting);
    configureTorchThreads(opt.threads);
    auto run = loadVerifiedRun(opt.manifest);
    manifest = std::move(run.manifest);
    tokenizer = std::move(run.tokenizer);
    identity = PeerIdentity::loadOrCreate(opt.dataDir / "identity.key");
    // Fault injection for tests (tst_closedrun): DEDLOC_FAULT_IGNORE_TOKEN=1 joins a closed
    // run without a valid token, to prove that the others refuse it at the handshake.
    access = setUpRunAccess(*manifest, *identity, opt.leadKey, opt.dataDir, opt.accessTokenFile,
                            std::getenv("DEDLOC_FAULT_IGNORE_TOKEN") == nullptr);
    TrainerConfig config;
    config.seed = opt.dataSeed;
    config.allowCuda = opt.allowCuda && opt.role == PeerRole::Trainer;
    config.microBatchSize = opt.microBatchSize;
    {
        std::lock_guard lock(mutex); // the window sets its caps before start()
        config.devices = trainingDevices(capsChanged ? caps.gpus : opt.gpus, config.allowCuda, cudaDeviceCount());
    }
    if (config.devices.empty())
        config.devices = {"cpu"};
    checkpointDir = runDataDir(opt.dataDir, manifest->runId);
    fingerprint = trainingFingerprint(*manifest);
    // Releases of another service protocol are another swarm too: mixed, they would count each
    // other's samples and wait for each other in groups that refuse them.
    swarmId = manifest->runId + "@" + fingerprint + "-v" + std::to_string(ServiceProtocolVersion);
    loadBans();
    trainer = startTrainer(*manifest, *tokenizer, *identity, config, checkpointDir,
                           opt.resume && opt.role != PeerRole::Auxiliary, "swarm");
    restoreFeedbackResidual();
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
    if (opt.role == PeerRole::Monitor)
        startDownstreamEvaluation();

    TrackerOptions trackerOptions;
    trackerOptions.targetBatchSize = manifest->training.targetBatchSize;
    trackerOptions.matchmakingTime = opt.matchmaking.window;
    trackerOptions.selfId = identity->peerId();
    trackerOptions.delayedUpdates = manifest->averaging().delayedParameterUpdates;
    // Counts bounded by throughput (by default in open runs only: a closed run's peers hold the
    // lead's tokens).
    trackerOptions.maxRateOverMedian = manifest->maxRateOverMedian();
    {
        std::lock_guard lock(mutex);
        tracker = ProgressTracker(trackerOptions);
    }

    if (const auto problem = advertisingProblem(opt); !problem.empty())
        throw Error(problem);
    dht = std::make_unique<DhtNode>(*identity, opt.dhtPort, opt.host);
    dhtPort = dht->port();
    for (const auto &b : opt.bootstrap)
        dht->bootstrap(b);
    for (const auto &b : manifest->bootstrapPeers)
        dht->bootstrap(b);
    if ((!opt.bootstrap.empty() || !manifest->bootstrapPeers.empty()) && !dht->waitForNodes(1, 10.0))
        log::warning("swarm", "no DHT node answered within 10 s; "
                                  + std::string(opt.role != PeerRole::Trainer ? "alone"
                                                : opt.minPeers > 1 ? "waiting for " + std::to_string(opt.minPeers) + " peers"
                                                                   : "training alone")
                                  + " until the swarm is reachable");
    const std::string allReducePort = opt.allReducePort ? std::to_string(opt.allReducePort) : "*";
    const std::string servicePort = opt.servicePort ? std::to_string(opt.servicePort) : "*";
    if (reachable()) {
        service = std::make_unique<PeerService>(swarmId, "tcp://" + opt.host + ":" + servicePort, 128 * 1024,
                                                access.security, bans);
        service->setState(std::make_shared<StateSnapshot>(StateSnapshot{trainer->step(), trainer->stateFlat()}));
        if (opt.tamperServedState)
            service->setPartTamper(opt.tamperServedState);
    }
    allReduce = std::make_unique<AllReduceEndpoint>(reachable(), "tcp://" + opt.host + ":" + allReducePort, access.security);
    if (!opt.announce.empty()) {
        const auto announced = announcedEndpoints(opt.announce, allReduce->endpoint(), service->endpoint());
        log::info("swarm", "bound " + allReduce->endpoint() + " and " + service->endpoint() + "; announcing "
                               + announced.allReduce + " and " + announced.service + " (a port forward)");
        allReduce->advertise(announced.allReduce);
        service->advertise(announced.service);
    }
    mapRouterPorts();
    settleReachability();
    MatchSelf self{identity->peerId(), swarmId, allReduce->endpoint(), declaredBandwidth(opt.bandwidth), opt.clientMode,
                   opt.role == PeerRole::Trainer, identity->publicKey()};
    auto matchmaking = opt.matchmaking;
    matchmaking.targetGroupSize = static_cast<std::size_t>(manifest->averaging().groupSize);
    matchmaking.capShares = manifest->aggregation().rule == AggregationRule::CenteredClip; // open runs
    matchmaker = std::make_unique<Matchmaker>(*dht, service.get(), self, matchmaking, access.security, bans);
    log::info("swarm", "averaging groups hold up to " + std::to_string(matchmaking.targetGroupSize)
                           + " peers (the run's averaging.group_size); larger swarms merge their groups' averages");
    MergeOptions mergeOptions;
    mergeOptions.fetchTimeout = opt.matchmaking.requestTimeout;
    mergeOptions.maxGroupWeight = static_cast<double>(maxSamplesPerEpoch(manifest->training.targetBatchSize));
    mergeOptions.targetGroupSize = matchmaking.targetGroupSize;
    mergeOptions.publishChecks = !opt.withholdChecks;
    merger = std::make_unique<GroupMerger>(*dht, service.get(), MergeSelf{identity->peerId(), swarmId},
                                           mergeOptions, access.security, bans);
    auditor = std::make_unique<ResultAuditor>(*merger, bans, identity->peerId(), manifest->aggregation());

    update([&](PeerSnapshot &s) {
        s.role = opt.role;
        s.peerId = identity->peerId();
        s.runId = manifest->runId;
        s.runName = manifest->name;
        s.accessTokenExpiresAt = double(access.ownTokenExpiresAt);
        s.deviceName = trainer->deviceName();
        s.localEpoch = trainer->step();
        s.targetBatchSize = manifest->training.targetBatchSize;
        s.allTime = c;
    });
    setMyRecord(0, 0.0);
    log::info("swarm", std::string(peerRoleName(opt.role)) + " " + identity->peerId().substr(0, 16) + " on DHT port "
                           + std::to_string(dht->port())
                           + (reachable() ? ", service " + service->endpoint() + ", all-reduce " + allReduce->endpoint()
                                          : std::string(", client mode")));
    const auto rule = manifest->aggregation();
    char radius[32];
    std::snprintf(radius, sizeof radius, "%g", rule.radius);
    log::info("swarm", rule.rule == AggregationRule::CenteredClip
                           ? std::string("gradients combine with CenteredClip (radius ") + radius
                                 + " x the median distance) in groups of 3 senders or more, the mean in smaller ones"
                           : std::string("gradients combine with the exact mean (the run's aggregation rule)"));
    control = std::thread([this] { controlLoop(); });
    // Give the first progress read a moment, so that a joiner sees the swarm's epoch.
    for (int i = 0; i < 50 && !firstFetchDone.load() && !stopFlag.load(); ++i)
        sleepFor(0.1);
}

// What the codec held back before the restart is sent with the next contributions, as if the peer
// had not stopped; only with a codec that uses error feedback.
void SwarmPeer::Impl::restoreFeedbackResidual()
{
    auto residual = trainer->takeRestoredFeedbackResidual();
    if (residual.empty())
        return;
    if (!ErrorFeedback::supports(manifest->compression)) {
        log::info("ckpt", "the checkpoint's error-feedback residual is dropped: the run's codec does not use one");
        return;
    }
    try {
        errorFeedback.restore(std::move(residual));
        log::info("ckpt", "error-feedback residual restored (" + std::to_string(errorFeedback.residual().size())
                              + " elements)");
    } catch (const Error &e) {
        log::warning("ckpt", std::string("the checkpoint's error-feedback residual is dropped: ") + e.what());
    }
}

bool SwarmPeer::Impl::trySave()
{
    return saveCheckpointOrWarn(*trainer, checkpointDir, errorFeedback.residual());
}

void SwarmPeer::Impl::mapRouterPorts()
{
    // Only a peer on a LAN address has a router to ask; loopback (a local swarm) has none.
    const bool lanAddress = opt.host.find_first_not_of("0123456789.") == std::string::npos && isPrivateIpv4(opt.host)
                            && opt.host.rfind("127.", 0) != 0 && opt.host.rfind("0.", 0) != 0;
    if (!opt.mapPorts || !reachable() || !service || !opt.announce.empty() || !lanAddress)
        return;
    const long allReducePort = endpointPort(allReduce->endpoint()), servicePort = endpointPort(service->endpoint());
    if (allReducePort <= 0 || servicePort <= 0)
        return;
    PortMappingOptions o;
    o.ports = {static_cast<std::uint16_t>(allReducePort), static_cast<std::uint16_t>(servicePort)};
    o.lanAddress = opt.host;
    o.description = "dedloc " + identity->peerId().substr(0, 16);
    portMapping = std::make_unique<PortMapping>(o);
    const auto r = portMapping->map();
    if (!r.ok()) {
        log::info("swarm", "no port mapping from the router: " + r.why);
        portMappingNote = "the router gave no port mapping: " + r.why;
        portMapping.reset();
        return;
    }
    allReduce->advertise("tcp://" + r.externalAddress + ":" + std::to_string(r.externalPorts[0]));
    service->advertise("tcp://" + r.externalAddress + ":" + std::to_string(r.externalPorts[1]));
    log::info("swarm", "the router maps " + allReduce->endpoint() + " and " + service->endpoint() + " to this peer ("
                           + portMappingMethodName(r.method) + ", lease " + std::to_string(r.leaseSeconds) + " s)");
    mapDhtPort(o);
}

void SwarmPeer::Impl::mapDhtPort(PortMappingOptions o)
{
    // Others find this node at the port its packets leave the router from; a masquerading
    // router keeps the local port when it is free, so the same external port is what counts.
    o.ports = {dht->port()};
    o.udp = true;
    dhtMapping = std::make_unique<PortMapping>(o);
    const auto r = dhtMapping->map();
    if (!r.ok()) {
        log::info("swarm", "the router does not map the DHT's UDP port " + std::to_string(dht->port()) + ": " + r.why);
        dhtMapping.reset();
        return;
    }
    log::info("swarm", "the router maps UDP port " + std::to_string(r.externalPorts[0]) + " to the DHT node"
                           + (r.externalPorts[0] == dht->port() ? std::string() : " (not its own port: others may not reach it)"));
}

void SwarmPeer::Impl::settleReachability()
{
    std::string note;
    if (!reachable()) {
        note = "client mode (--client-mode): connecting out only";
    } else if (!opt.checkReachability) {
        note = "reachable at " + service->endpoint() + " (not checked)";
    } else {
        const ReachRequest self{identity->peerId(), identity->publicKey(), service->endpoint()};
        auto v = checkReachability(usableDonors(), self, access.security, stopFlag);
        // A trainer that found no donor to ask looks again a little later: donors advertise
        // every few seconds, and a wrong guess costs it every round it cannot serve.
        for (int retry = 0; retry < 2 && opt.role == PeerRole::Trainer && v.checkersAsked == 0 && !stopFlag.load(); ++retry) {
            sleepFor(1.5);
            v = checkReachability(usableDonors(), self, access.security, stopFlag);
        }
        if (v.reachability == Reachability::Unreachable && opt.role == PeerRole::Trainer) {
            log::warning("swarm", "other peers cannot connect to this one (" + v.why + "): client mode from now on, "
                                  "connecting out only" + (opt.announce.empty() ? "" : "; check the router's port forward"));
            service.reset();
            portMapping.reset(); // removes the mappings nobody got through
            dhtMapping.reset();
            allReduce = std::make_unique<AllReduceEndpoint>(false, std::string(), access.security);
            opt.clientMode = true;
            note = "client mode: other peers cannot connect to this machine (" + v.why
                   + (portMappingNote.empty() ? "" : "; " + portMappingNote) + ")";
        } else if (v.reachability == Reachability::Unreachable) {
            log::warning("swarm", std::string(peerRoleName(opt.role)) + " unreachable: " + v.why
                                      + "; it must be reachable to help: open or forward its ports");
            note = "unreachable: " + v.why;
        } else {
            note = reachableNote(v);
            // Nobody could tell yet (the first trainer of a run, say): ask again while training.
            reachabilityUnsettled = v.reachability == Reachability::Unknown && opt.role == PeerRole::Trainer;
        }
    }
    update([&](PeerSnapshot &s) { s.reachability = note; });
}

std::string SwarmPeer::Impl::reachableNote(const ReachabilityVerdict &v)
{
    if (v.reachability == Reachability::Reachable && endpointHost(v.reachedAt) != endpointHost(service->endpoint()))
        // A checker's word is no proof of an address (it may lie, or sit on this LAN):
        // only the volunteer announces one.
        log::warning("swarm", "reached at " + v.reachedAt + ", not at the advertised " + service->endpoint()
                                  + ": if that is a port forward, pass --announce " + endpointHost(v.reachedAt));
    log::info("swarm", std::string("reachability ") + reachabilityName(v.reachability) + ": " + v.why);
    const std::string through = portMapping ? " through " + portMapping->result().describe() : "";
    return v.reachability == Reachability::Reachable ? "reachable" + through + ": " + v.why
                                                     : "reachable" + through + ", not confirmed: " + v.why;
}

void SwarmPeer::Impl::recheckReachability()
{
    const ReachRequest self{identity->peerId(), identity->publicKey(), service->endpoint()};
    const auto v = checkReachability(usableDonors(), self, access.security, stopFlag);
    if (v.reachability == Reachability::Unknown || stopFlag.load())
        return; // the control loop asks again later
    if (v.reachability == Reachability::Unreachable && ++lateUnreachableVerdicts < LateUnreachableConfirmations) {
        log::info("swarm", "a peer could not connect to this one (" + v.why + "); asking again before acting as a client");
        return;
    }
    reachabilityUnsettled = false;
    if (v.reachability == Reachability::Reachable) {
        lateUnreachableVerdicts = 0;
        const auto note = reachableNote(v);
        update([&](PeerSnapshot &s) { s.reachability = note; });
        return;
    }
    // It stays bound (whoever reaches it, on its LAN say, is still served) but reduces no
    // shard, leads no group and advertises no state from its next search on.
    log::warning("swarm", "other peers cannot connect to this one (" + v.why + "; the first peer able to check "
                          "came only now): client mode from now on, connecting out only"
                          + (opt.announce.empty() ? "" : "; check the router's port forward"));
    becameClient = true;
    matchmaker->becomeClient();
    {
        std::lock_guard lock(mutex);
        donorAdvert.reset();
    }
    const std::string note = "client mode: other peers cannot connect to this machine (" + v.why + ")";
    update([&](PeerSnapshot &s) { s.reachability = note; });
}

void SwarmPeer::Impl::setMyRecord(long samples, double samplesPerSecond)
{
    ProgressRecord r;
    r.peerId = identity->peerId();
    r.epoch = trainer->step();
    r.samplesAccumulated = pausedFlag ? 0 : samples;
    r.samplesPerSecond = pausedFlag ? 0.0 : samplesPerSecond;
    r.time = unixNow();
    r.expiresAt = r.time + progressTtl(maxProgressPeriod()); // own record: refreshed at every micro-batch
    r.clientMode = inClientMode();
    r.role = opt.role;
    r.paused = pausedFlag;
    r.syncing = syncingFlag;
    r.averages = opt.role != PeerRole::Monitor || opt.monitorReduces;
    r.accessToken = access.ownToken;
    if (opt.tamperRecord && !pausedFlag)
        opt.tamperRecord(r);
    {
        std::lock_guard lock(mutex);
        if (opt.role == PeerRole::Auxiliary)
            r.epoch = snap.globalEpoch;
        r.followedEpoch = myRecord.followedEpoch; // a monitor's, kept by refreshSwarmView()
        // Starting or stopping to compute counts too: the others' ETA (and with it their
        // progress period) changes from unknown to seconds or back.
        const bool changed = myRecord.peerId.empty() || r.epoch != myRecord.epoch || r.paused != myRecord.paused
                             || r.syncing != myRecord.syncing
                             || (r.samplesPerSecond > 0.0) != (myRecord.samplesPerSecond > 0.0);
        if (r.epoch != myRecord.epoch)
            lastEpochChange = r.time;
        myRecord = r;
        tracker.update(r, r.time); // our own count is exact, not extrapolated from a report
        if (!changed)
            return;
    }
    // Others wait on this record (a group's expected members, a new epoch's donors): publish now.
    {
        std::lock_guard lock(wakeMutex);
        publishSoon = true;
    }
    wake.notify_all();
}

void SwarmPeer::Impl::logSessionSummary(long lastEpoch) const
{
    const double seconds = unixNow() - started;
    const std::string why = trainer->step() >= lastEpoch ? "reached the run's last step"
                            : timeUp()                   ? "time limit reached"
                                                         : "stopped";
    char took[32];
    std::snprintf(took, sizeof took, "%.0f s", seconds);
    log::info("swarm", why + " after " + took + ": " + std::to_string(stepsThisSession) + " step(s) this session, "
                           + std::to_string(stepsAveragedThisSession) + " averaged with other peers; at epoch "
                           + std::to_string(trainer->step()));
}

void SwarmPeer::Impl::run()
{
    started = unixNow();
    {
        std::lock_guard lock(mutex);
        lastEpochChange = started; // the base period while this peer first looks at the swarm
    }
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
    portMapping.reset(); // the router forwards nothing to a stopped peer
    dhtMapping.reset();
    workerDone = true;
    wake.notify_all();
    if (control.joinable())
        control.join();
}

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
