#pragma once
// Private to core/peer: the state of one SwarmPeer (peer/SwarmPeer.h), shared by the files
// that implement it, one per concern (set-up and worker, control thread, state sharing, the
// trainer role, the auxiliary and monitor roles). Threads and ownership as in SwarmPeer.h: the
// members under "shared between threads" are read and written under `mutex` (or are atomic);
// the rest belong to the worker thread, except `dht`, which the control thread also uses
// (DhtNode is thread-safe), and `bans` and `access.security`, which are thread-safe.
#include "model/Tokenizer.h"
#include "net/DhtNode.h"
#include "net/PeerIdentity.h"
#include "net/PortMapping.h"
#include "net/TokenBucket.h"
#include "run/RunManifest.h"
#include "face/ComputeUtilisation.h"
#include "compress/ErrorFeedback.h"
#include "averaging/BanList.h"
#include "averaging/ButterflyAllReduce.h"
#include "averaging/OutlierRecord.h"
#include "averaging/PeerService.h"
#include "averaging/ProgressExchange.h"
#include "averaging/ProgressPacing.h"
#include "averaging/Reachability.h"
#include "peer/CollaborativeStep.h"
#include "peer/DownstreamMonitor.h"
#include "peer/ResultAuditor.h"
#include "peer/RunAccess.h"
#include "monitor/SwarmMetricsRecorder.h"
#include "util/LineAppender.h"
#include "peer/SwarmPeer.h"
#include "system/HeapTrim.h"
#include "train/MetricsWriter.h"
#include "train/Trainer.h"
#include "util/Clock.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace dedloc {

struct SwarmPeer::Impl {
    SwarmOptions opt;
    double started = 0.0;

    // --- shared between threads
    mutable std::mutex mutex;
    PeerSnapshot snap;
    ProgressRecord myRecord;           // what the control thread publishes
    std::optional<std::string> pendingMetrics;
    // This trainer's last steps: every metrics record lists them as "steps" [[step, samples], ...]
    // so that the monitor credits each (monitor/CreditLedger.h skips what it has) even when a
    // newer record replaced one on the DHT before the monitor read it (a trainer publishes at
    // every step, a monitor reads once per progress period). At most RecentSteps, the newest.
    std::vector<std::pair<long, long long>> recentSteps;
    static constexpr std::size_t RecentSteps = 32;
    std::optional<DonorAdvert> donorAdvert;
    // A trainer nobody can download from (client mode): the (epoch, SHA-256) of the state it
    // holds, claimed in its records all the same (afterStateChange), so that its group's claims
    // vouch for a donor that holds the same state, such as a monitor that follows the group.
    std::optional<std::pair<long, std::string>> heldStateClaim;
    // Worker thread: the hash of the latest claim, computed beside training (one at a time).
    std::future<void> claimHashing;
    ProgressTracker tracker{TrackerOptions{}};
    std::atomic<bool> stopFlag{false};
    std::atomic<bool> pausedFlag{false};
    // Downloading state: published, so nobody expects us in a group.
    std::atomic<bool> syncingFlag{false};
    // Worker thread only: our parameters may differ from the swarm's (we ask our next group for a
    // state round, and our donor advert says so meanwhile).
    bool repairWanted = false;
    // Worker thread only: our state is the swarm's at our epoch (a download from a donor whose
    // state agrees, or a step that left it with the group's): updates of later epochs replay
    // onto it (replayUpdates). False at start: our own initial or checkpointed state.
    bool stateIsSwarms = false;
    // Worker thread only: the last state round changed this trainer's state (it was not the
    // group's already), so the step's update alone does not lead to it.
    bool stateRoundChanged = false;
    // Worker thread only: seconds the last replayed update took to fetch (< 0: none yet), and
    // when a replay last said it cannot catch up (averaging/ReplayPace.h; Unix seconds).
    double updateFetchSeconds = -1.0, replayPaceToldAt = -1e9;
    // Worker thread only: the epoch whose state was last compared with the swarm's
    // (checkModelAgreement), when this peer reached its epoch, and while repairing a strayed
    // state, the digest of the state most peers hold (the only one a download takes then).
    long agreementChecked = -1;
    long agreementEpoch = -1;
    double agreementEpochSince = 0.0;
    std::string swarmDigestWanted;
    std::atomic<bool> workerDone{false};
    std::atomic<int> exitCode{0};
    std::atomic<std::uint16_t> dhtPort{0};
    // The control thread has read the swarm's progress records once: start() waits for it (up to
    // 5 s), so that a joiner sees the swarm's epoch before its first decision.
    std::atomic<bool> firstFetchDone{false};
    std::condition_variable wake;
    std::mutex wakeMutex;
    // Set when this peer's epoch, pause or sync state changes: the control loop publishes its
    // record at once instead of at the end of its (adaptive) period.
    std::atomic<bool> publishSoon{false};
    double lastEpochChange = 0.0; // Unix seconds this peer saw its or the swarm's epoch change (mutex)
    std::thread worker;
    std::thread control;
    ResourceCaps caps;
    bool capsChanged = false;
    double computeShare = 1.0; // the caps' share, as the worker applied it (ResourceCaps::computeShare)
    mutable TokenBucket upload;    // the upload cap of every round (rate 0: none)
    // What sparse gradient rounds left unsent of this peer's contributions (TopK4Bit runs; the
    // rounds run one at a time). Forgotten when a downloaded state replaces the trainer's.
    mutable ErrorFeedback errorFeedback;
    mutable TokenBucket download;  // the download cap of every round (rate 0: none)

    // --- owned by the worker thread (the control thread only uses dht, which is thread-safe)
    std::optional<RunManifest> manifest;
    std::unique_ptr<Tokenizer> tokenizer;
    std::optional<PeerIdentity> identity;
    RunAccess access;                  // data-plane security (thread-safe) and our own token
    // Peers that sent invalid data (thread-safe): struck by the service, the rounds; banned
    // peers are not asked to lead, not accepted as followers, not expected, not state donors.
    std::shared_ptr<BanList> bans = std::make_shared<BanList>();
    // This peer's reducers' CenteredClip verdicts on each sender (thread-safe): a persistent
    // outlier is struck, an occasional one is not (averaging/OutlierRecord.h).
    OutlierRecord outlierRecord;
    // Gives the allocator's free pages back every 30 s (control loop; system/HeapTrim.h): the
    // buffers of every step leave freed blocks between live ones, and RSS would climb with steps.
    HeapTrimmer heapTrimmer{30.0};
    std::unique_ptr<Trainer> trainer;
    std::unique_ptr<DhtNode> dht;
    std::unique_ptr<PeerService> service;
    std::unique_ptr<AllReduceEndpoint> allReduce;
    std::unique_ptr<PortMapping> portMapping; // held while the router maps our ports (renews itself)
    std::unique_ptr<PortMapping> dhtMapping;  // the DHT node's UDP port, beside them
    std::string portMappingNote;              // why the router gave none ("" when not asked)
    std::unique_ptr<Matchmaker> matchmaker;
    std::unique_ptr<GroupMerger> merger; // the epoch's groups merged into one step
    std::unique_ptr<ResultAuditor> auditor; // judges the reducers of rounds that check results
    std::unique_ptr<MetricsWriter> metrics;
    std::shared_ptr<SwarmMetricsRecorder> recorder;
    std::unique_ptr<DownstreamMonitor> downstream; // monitor with a downstream evaluation
    std::filesystem::path checkpointDir;
    std::string gradientSchema, stateSchema;
    // The run id and the manifest's training fingerprint (run/RunManifest.h trainingFingerprint):
    // what the swarm's DHT keys and service messages name, so that peers on other versions of the
    // run's manifest never count, group or download together (credit and tokens: the run id).
    std::string swarmId;
    std::optional<ProgressExchange> progressExchange; // records' DHT keys; exchange() makes it
    ProgressExchange &exchange();
    std::string fingerprint; // trainingFingerprint(*manifest)
    double emaSamplesPerSecond = 0.0;
    ComputeUtilisation utilisation; // wall time computing, per step and over the last steps
    // Starts a utilisation interval now (training starts or resumes).
    void restartUtilisation();
    long long sessionSamplesStart = 0;
    double sessionComputeStart = 0.0;
    long sessionStepsStart = 0;
    long stepsThisSession = 0, stepsAveragedThisSession = 0; // worker thread (reportStep)
    // The trainer's last line: why it ended, how long it ran, its steps and how many averaged.
    void logSessionSummary(long lastEpoch) const;
    long long swarmSamplesSeen = 0, mySamplesSeen = 0;
    double uploadMbit = -1.0; // measured in rounds (afterRound); < 0 none yet
    double roundTripSeconds = 0.0; // to the farthest member of the last group (afterRound); 0: none yet
    // Seconds the last complete round of this peer's group took (the merge hook; step thread):
    // how long a peer without a round waits for another group's round (GroupMerger::adopt).
    double lastRoundSeconds = 0.0;
    static constexpr double MaxMeasuredMbit = 200.0; // measured rates above it count as equal
    // Fault injection for tests (tst_swarm): DEDLOC_FAULT_STALL_ROUND=<epoch> makes this peer
    // freeze inside its first round at that epoch or later that it joins as a member (not as
    // its leader), as a peer that hangs mid-round.
    long faultStallEpoch = std::getenv("DEDLOC_FAULT_STALL_ROUND") ? std::atol(std::getenv("DEDLOC_FAULT_STALL_ROUND")) : -1;
    // DEDLOC_FAULT_PAUSE_IN_GROUP=<epoch>: the peer pauses itself as soon as its search for a
    // group at that epoch or later has ended, as a volunteer pressing Pause just then.
    long faultPauseEpoch = std::getenv("DEDLOC_FAULT_PAUSE_IN_GROUP") ? std::atol(std::getenv("DEDLOC_FAULT_PAUSE_IN_GROUP")) : -1;
    // DEDLOC_FAULT_TIME_UP_IN_GROUP=<epoch>: the peer's time limit is reached as soon as its
    // search for a group at that epoch or later has formed one, as a --duration ending just then.
    long faultTimeUpEpoch = std::getenv("DEDLOC_FAULT_TIME_UP_IN_GROUP") ? std::atol(std::getenv("DEDLOC_FAULT_TIME_UP_IN_GROUP")) : -1;
    bool faultTimeUp = false; // set once by that fault (worker thread)

    explicit Impl(SwarmOptions o) : opt(std::move(o)) {}
    bool reachable() const { return !opt.clientMode; }
    // Set once a late reachability check found that nobody can connect to this peer: it stays
    // bound and serves what reaches it, but joins groups as a client and advertises no state.
    std::atomic<bool> becameClient{false};
    bool inClientMode() const { return opt.clientMode || becameClient.load(); }
    // The first check found nobody to ask (or nobody answered surely): the control loop asks
    // again every ReachabilityRecheckPeriod seconds until an answer is sure.
    std::atomic<bool> reachabilityUnsettled{false};
    static constexpr double ReachabilityRecheckPeriod = 10.0;
    // A late "nobody can connect" is acted on only when this many checks in a row say so (a
    // reachable peer on a loaded machine may miss one dial-back), asked ReachabilityConfirmDelay
    // seconds apart; a "reachable" in between settles it as reachable.
    std::atomic<int> lateUnreachableVerdicts{0};
    static constexpr int LateUnreachableConfirmations = 2;
    static constexpr double ReachabilityConfirmDelay = 2.0;
    double nextReachabilityCheckDelay() const
    {
        return lateUnreachableVerdicts.load() > 0 ? ReachabilityConfirmDelay : ReachabilityRecheckPeriod;
    }

    template <typename F> void update(F &&f)
    {
        std::lock_guard lock(mutex);
        f(snap);
        ++snap.sequence;
    }

    void setState(PeerState state, const std::string &detail = {})
    {
        std::lock_guard lock(mutex);
        // A pause shows until resume(), whatever the worker finishes meanwhile.
        if (pausedFlag.load() && (state == PeerState::Training || state == PeerState::Averaging
                                  || state == PeerState::Syncing || state == PeerState::Connecting))
            return;
        if (snap.state == state && snap.stateDetail == detail)
            return; // nothing new: consumers skip by sequence
        snap.state = state;
        snap.stateDetail = detail;
        ++snap.sequence;
    }

    bool timeUp() const
    {
        return faultTimeUp || (opt.durationSeconds > 0 && unixNow() - started >= opt.durationSeconds);
    }

    // The longest period between progress records (SwarmPeer::Options::maxProgressPeriod).
    double maxProgressPeriod() const
    {
        return opt.maxProgressPeriod > 0.0 ? opt.maxProgressPeriod : 10.0 * opt.progressPeriod;
    }
    // How long a progress record lives when the next turn comes after `period` seconds.
    double progressTtl(double period) const { return progressRecordTtl(opt.progressPeriod, period); }

    void sleepFor(double seconds)
    {
        std::unique_lock lock(wakeMutex);
        wake.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return stopFlag.load(); });
    }

    // --- set-up and the worker thread (SwarmPeer.cpp)
    void setUp();
    // A reachable peer asks others to connect back (averaging/Reachability.h); a trainer that
    // nobody can reach switches to client mode. Sets the snapshot's reachability sentence.
    void settleReachability();
    // The snapshot's sentence for a verdict other than unreachable (logs it too).
    std::string reachableNote(const ReachabilityVerdict &v);
    // While unsettled, beside the control loop: asks again; a sure "unreachable" makes this
    // trainer a client from its next search on (becameClient), a sure "reachable" settles it.
    void recheckReachability();
    // Asks the router for mappings of the two ports (SwarmOptions::mapPorts) and advertises them.
    void mapRouterPorts();
    // With the TCP ports mapped, asks the same router for the DHT node's UDP port (a node others
    // cannot reach sees only part of the swarm's records).
    void mapDhtPort(PortMappingOptions options);
    void setMyRecord(long samples, double samplesPerSecond);
    void run();

    // --- control thread: progress records, metrics, the swarm view (SwarmControl.cpp)
    void controlLoop();
    void readProgress();
    // --- credit (SwarmCredit.cpp): a monitor publishes what it recorded of each peer; a trainer
    // keeps its own record of its steps and reads what the monitors say of it.
    void publishCredit();
    void readCredit();
    // --- manifest versions (SwarmVersions.cpp; averaging/ManifestVersions.h), run by the control
    // loop on one std::async task at a time: publishes this peer's fingerprint under the run id's
    // "versions" key, reads the others', and tells the volunteer of peers on another version.
    void checkManifestVersions();
    // Other versions told, when a read last saw each (that task only; OtherVersions::MaxFingerprints).
    std::map<std::string, double> otherFingerprintsSeen;
    void recordOwnStep(long step, long long samples, double loss); // the worker, after each step
    std::mutex creditMutex;                  // guards ownStepSamples
    std::map<long, long long> ownStepSamples; // step -> this peer's samples in it
    LineAppender contributionRecord;          // <run data dir>/contribution.csv (worker thread)
    // The active bans, kept in <run data dir>/bans.json across restarts (averaging/BanList.h):
    // loaded at start unless --fresh; saved by the control thread after each new ban and at the
    // end. A file that cannot be read or written is logged and otherwise ignored.
    void loadBans();
    void saveBansIfChanged();
    std::uint64_t bansSaved = 0;
    // Under `mutex`.
    void refreshSwarmView(double now);
    // The wait before the next progress record (adaptiveProgressPeriod of the swarm's ETA).
    double nextProgressPeriod();
    // How often the control loop pings the bootstrap peers again (DhtNode::bootstrapAgain).
    static constexpr double BootstrapAgainSeconds = 30.0;
    // Sleeps `period` seconds, until a record changed (publishSoon) or the peer stops.
    void waitForNextRecord(double period);
    // Peers (this one included, banned ones not) that will average at `epoch`
    // (ProgressTracker::expectedPeers, trainers up to ExpectedLag behind). A leader forms its
    // group early once all of them joined (averaging/Matchmaker.h), so counting one too few drops
    // a peer from the step (it must resync), while counting one too many only costs waiting to
    // the deadline: the count errs on the high side. Records lag by a progress period plus DHT
    // latency, which may span several steps when steps take a second (tests) rather than
    // minutes (real runs).
    static constexpr long ExpectedLag = 3;
    // `pastIt`: also the trainers whose records already show the next epoch. They took this
    // epoch's step, in a group whose records an epoch's merge waits for (GroupMerge.h): without
    // them, the members of the last group to end would count only themselves and merge alone.
    std::size_t expectedPeers(long epoch, bool pastIt = false, bool thisShard = false);
    // The live records of the other peers, one line (debug logs).
    std::string describeRecords();
    std::string progressRecordsSeen; // control thread: whose records the last read returned

    // How far past the swarm's (corroborated) epoch a donor may be: the steps the swarm may take
    // between reading the progress records and asking the donor.
    static constexpr long MaxEpochLead = 2;

    // --- state sharing and round options (SwarmStateSharing.cpp; replay: SwarmReplay.cpp)
    // The donors advertised on the DHT, less the ones this peer has banned.
    std::vector<DonorAdvert> usableDonors();
    bool syncState(long minEpoch);
    // Downloads the state of `minEpoch` or later from the best usable donor and loads it; false
    // (with the reason in *why) when no donor delivered.
    // `consistentOnly`: never from a donor whose state may differ (DonorAdvert::mayDiffer).
    bool downloadAndLoadState(long minEpoch, std::string *why, bool consistentOnly = false);
    // "" when the progress records vouch for a donor's state (averaging/StateVouching.h),
    // waiting a little for records of a step the donor took meanwhile; else why not.
    std::string whyVouchedLate(const std::string &donorId, long epoch, const std::string &digest);
    // Behind the swarm (at `global`) with the swarm's state of our epoch: fetches the averaged
    // updates of the epochs in between from donors that agree and applies them in order
    // (averaging/UpdateDownload.h), at the cost of the compressed averages instead of the
    // state; true if it got at least one (the caller then looks again where the swarm is).
    // `oneBehind(epoch)`, when given, is called once with one update left (the last fetched in
    // under a third of the sender timeout): the swarm's epoch, or the next where its group formed
    // or is due (lateForGroupOf; the replay then waits for the running round's update). The
    // replay ends there (its group may wait for this peer) or at the first failure.
    bool replayUpdates(long global, const std::function<void(long)> &oneBehind = {});
    // One update short of the swarm's `epoch`: looks for that epoch's group while the update
    // downloads (the group forms meanwhile), so that this peer takes part in the step with
    // weight 0 once the replay ends, instead of finding the group gone and replaying again.
    void searchWhileReplaying(GroupSearch &search, long epoch);
    // Whether the group of `epoch` has formed, or forms before an update could download: its
    // samples reached the target batch, matchmaking starts soon, or a group of it is running.
    bool lateForGroupOf(long epoch);
    // After a replay: a search for an epoch other than this peer's is dropped, or, where its
    // group formed, served with weight 0 (the group waits for this member) without a step.
    void leaveSearchBehind(GroupSearch &search);
    // After a step: keeps the update for others to replay when our state is the group's result of it.
    void keepUpdate(const std::shared_ptr<const AveragedUpdate> &update, bool stateIsTheUpdates);
    // After the run's last step: serves its group average while peers of that epoch may fetch it.
    void serveTheLastStep(long lastEpoch);
    void afterStateChange();
    // After a round: strikes every member whose messages in it the link proved invalid, and
    // takes the upload rate this peer measured in it as its bandwidth (uploadMbit, matchmaker).
    void afterRound(const FormedGroup &group, const AllReduceReport &report);
    double declaredBandwidth(double mbit) const { return opt.tamperBandwidth ? opt.tamperBandwidth(mbit) : mbit; }
    AllReduceOptions roundOptions() const;
    // roundOptions() for a gradient round of `epoch` in `group` (checked where it checksResults), each
    // sender's weight bounded by what this peer's tracker counted for it (weightBounds). Takes `mutex`.
    AllReduceOptions gradientRoundOptions(long epoch, const GroupInfo *group = nullptr) const;
    bool averageStateNow(long epoch) const;
    // Whether `group` holds a state round after the gradients of `epoch`: a member asked for
    // repair, or the periodic round is due and the members did not all join with the same state
    // digest (GroupInfo::statesAgree; logged when that skips it).
    bool stateRoundDue(const FormedGroup &group, long epoch) const;
    // Before a search for a group of `epoch`: the joins carry the digest of this peer's state
    // when the periodic state round falls at that epoch and its state is of that epoch (a
    // trainer's always is; a monitor's when it replayed up to it), nothing otherwise (hashing
    // the state costs ~40 ms per 23 MB).
    void offerStateDigest(long epoch);
    // Averages parameters and optimizer state over `group` right after the gradient round of
    // `epoch`. Every member is a sender in this round: a peer that does not train sends weight
    // 0 and receives the trainers' average, which it keeps (as the state after that step) when
    // the round completed: auxiliaries and reducing monitors become state donors this way.
    // Returns whether the round completed (every member then holds the same state).
    bool averageState(const FormedGroup &group, long epoch);
    // After a step that left our parameters possibly different from the swarm's: downloads the
    // state of this epoch from a donor; false when none could give it.
    bool repairByDownload();
    // Sets repairWanted (and tells the matchmaker), with a log line when it changes.
    void setRepair(bool wanted);
    // Once per epoch, when the other peers' records of it are in (or two progress periods have
    // passed): a trainer whose state is not the one most peers hold at its epoch
    // (averaging/ModelAgreement.h) downloads theirs.
    void checkModelAgreement();

    // --- the trainer role (SwarmTrainerRole.cpp)
    void runTrainer();
    // The next micro-batch, cut to end by the global batch's ETA (averaging/ProgressPacing.h
    // fitMicroBatch) so that every peer reaches the step within a small micro-batch of the others.
    int fittedMicroBatch(double now, int fullMicroBatch);
    // The due global step: waits for this epoch's group (if `search` looks for one), averages and
    // applies (peer/CollaborativeStep.h), then afterStep. `contribute` false: pausing; a group
    // already joined gets this peer's part with weight 0.
    void takeStep(GroupSearch &search, bool alone, bool contribute = true);
    // One micro-batch of `samples`, its throughput in the estimate and the snapshot.
    void computeMicroBatch(int samples);
    struct GroupWait {
        std::optional<FormedGroup> group;
        std::string why;        // why no group formed
        bool overtaken = false; // the swarm stepped past the epoch while the group formed
    };
    // Waits for the group of `epoch` that `search` looks for (any thread; the tracker under
    // `mutex`). Also where DEDLOC_FAULT_STALL_ROUND stalls.
    GroupWait waitForGroup(GroupSearch &search, long epoch, bool alone);
    // The merge of the epoch's groups for a step's round (GroupMerger; any thread).
    [[nodiscard]] GroupMergeHook mergeHook();
    // After the round of `epoch` (decided at `decided`) and the step it applied: strikes, the
    // state round, repair, validation and the report; `outcome` empty: no step was taken.
    void afterStep(const std::optional<FormedGroup> &group, const std::optional<StepOutcome> &outcome, long epoch,
                   bool alone, std::chrono::steady_clock::time_point decided);

    // --- delayed parameter updates (SwarmDelayedStep.cpp; docs/PROTOCOL.md)
    // A step whose gradient left the trainer (Trainer::detachGradient): a background thread
    // waits for the group and runs the round while the worker computes the next step's
    // micro-batches; the worker applies the result once it is there. The background thread
    // touches neither the trainer nor anything but `search`, `allReduce`, `merger`, `tracker`
    // (under `mutex`) and the peer's log.
    struct StepInFlight {
        long epoch = 0;
        bool alone = false;
        std::chrono::steady_clock::time_point decided;
        DetachedGradient gradient;
        // This peer's share of the next batch (samples): it computes no more while waiting, as
        // the swarm cannot see samples of an epoch nobody published yet.
        long nextShare = 0;
        std::future<std::pair<GroupWait, std::optional<StepOutcome>>> round;
    };
    std::optional<StepInFlight> inFlight; // worker thread
    // Samples of the next step computed while the last step's round ran (reported with the step;
    // -1: the step was not delayed).
    long overlapSamples = -1;
    // After a delayed step this peer holds its share of the next batch already; it computes no
    // more until the others' records of the new epoch could arrive (or the step comes), so that
    // the batch stays near target_batch_size instead of growing by a propagation delay's compute.
    long heldShare = 0;
    double holdShareUntil = 0.0;
    [[nodiscard]] bool holdsItsShare(double now) const
    {
        return now < holdShareUntil && trainer->accumulatedSamples() >= heldShare;
    }
    void startDelayedStep(GroupSearch &search, bool alone);
    // One micro-batch toward the next step while the round runs (or a short wait once this
    // peer's share is computed); false when the step should be finished now: the round ended,
    // or the peer pauses, stops or is out of time (finishing then waits for the round).
    bool computeWhileInFlight();
    // Waits for the round in flight, applies its result (Trainer::applyDetachedStep), afterStep.
    void finishDelayedStep();
    // A "catch_up" metrics event: the epoch moved from `from` to the trainer's by another route
    // than a step of its own, `how` = "downloaded" (a donor's state) or "replayed" (averaged updates).
    void reportCatchUp(long from, const char *how);
    // Writes the step's metrics event, publishes it for the monitor and prints the status line;
    // `validationLoss`: this peer validated after the step (then the event carries val_loss).
    // `stateRound`: the group also averaged parameters and optimizer state after the gradients.
    void reportStep(const StepOutcome &step, double roundSeconds, bool stateRound, std::optional<double> validationLoss);
    // The process's resident set and heap in use now, in MiB ("rss_mib", "heap_mib"), added to a
    // step or round event (system/HeapTrim.h memoryUsage()). SwarmResources.cpp.
    static void addMemoryFields(nlohmann::json &fields);
    // Whether this peer validates after `step` (manifest validation_every_n_steps): a peer alone
    // always; in a group, one member per group, each in turn.
    bool validationDue(long step, std::size_t indexInGroup, std::size_t groupSize) const;
    // Validation loss on the held-out split; also a "validation" event and a status line.
    double validate();
    // Saves a checkpoint with the error-feedback residual; restoreFeedbackResidual() takes it back.
    bool trySave();
    void restoreFeedbackResidual();
    void applyCaps();
    // Moves the trainer to the chosen GPUs (ResourceCaps::gpus), or the CPU; logs what it skips.
    void applyDevices(const std::vector<int> &gpus);

    // --- the auxiliary and monitor roles (SwarmSupportRoles.cpp)
    void runAuxiliary();
    void runMonitor();
    // One turn of a peer that averages without training: when the trainers' step is near, finds
    // the group of their epoch and reduces a shard with weight 0 (then the state round, when
    // due). Returns at once when no round is due; `doneEpoch`: the last epoch helped.
    void helpNextRound(long &doneEpoch, const std::string &idle);
    // Monitor, after a gradient round it reduced in while holding the swarm's state of that
    // epoch: applies the round's average (`averaged`, what every member applies; `captured`: its
    // encoded pieces, kept as the epoch's update for replays) as the trainers do, so that the
    // monitor holds their next state without downloading it; the only way it can follow a swarm
    // whose trainers are all in client mode (they serve neither states nor updates). Only after
    // a complete round in which it reduced the whole vector (it sends nothing, so it receives no
    // other reducer's shard). Other groups of the epoch merge into its step as into the trainers'
    // (averaging/GroupMerge.h; `roundSeconds`: how long the round took). Returns whether it followed.
    bool followRound(const FormedGroup &group, const AllReduceReport &report, const std::vector<float> &averaged,
                     std::vector<EncodedPiece> captured, Compression codec, double roundSeconds);
    // Monitor: follows the swarm when it is `monitorStateEvery` epochs ahead: replays the
    // trainers' averaged updates since its epoch (an update is a round's compressed average, far
    // smaller than the state), or downloads the state when no chain of updates leads there (at
    // most every few seconds while no donor delivers); `lastTry`: when it last tried; `idle`:
    // its status line.
    void refreshMonitorState(double &lastTry, const std::string &idle);
    // Monitor: saves the state, archives it and offers it to the downstream evaluation.
    void keepMonitorState();
    // Monitor: a copy of the checkpoint just saved, per epoch, the oldest beyond the limit removed.
    void archiveCheckpoint();
    void startDownstreamEvaluation();
};

} // namespace dedloc
