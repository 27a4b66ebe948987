#pragma once
// Collaborative progress and the step trigger of DeDLOC (Diskin et al. 2021, section 3.1 and
// appendix; docs/PROTOCOL.md "Progress records and the step trigger").
//
// Every peer publishes a ProgressRecord every few seconds. The tracker keeps the newest record per
// peer (DHT reads can return older copies beside newer ones), forgets expired ones, and answers:
//   - the global epoch, as seen by a trainer at local epoch e: the highest of e and the epochs
//     of the live non-client trainers and monitors, i.e. of the peers whose state can be
//     downloaded (hivemind's rule: a client-mode peer serves no state, so a resync to its epoch
//     could never succeed; auxiliaries hold no state of their own). Seen by a peer that does
//     not train (an auxiliary or a monitor, localEpoch = NotTraining): the highest epoch of the
//     live trainers, client-mode ones included, i.e. where the training happens;
//     in both views an epoch claim counts only when another peer corroborates it: a claim more
//     than one above every other live record's epoch (this peer's own included) is ignored, so
//     one stranger announcing epoch 10^12 cannot make every peer resync forever. The swarm steps
//     one epoch at a time, so an honest claim is at most one above some other peer's (a monitor's
//     epoch is that of its last state and may lag, so a monitor's record supports the epoch it
//     follows, followedEpoch, when that is higher; the trainers' corroborate each other). A
//     claimant that is the only other live peer has nobody to be compared with and counts;
//     and only an epoch the swarm holds counts: at least half of the votes reach it (ties go to
//     the higher epoch, so a peer beside one other follows it; a peer that does not train
//     follows a trainer above it as far as that epoch). Every live record but an auxiliary's
//     or a paused peer's votes for the epoch it supports, and a trainer for its own local epoch
//     (a paused peer's stays where it paused). Corroboration alone checks each claim against
//     the others, so two colluders could climb by turns (A at e + 1 beside honest e, B at e + 2
//     beside A, ...) until every honest peer resynced to an epoch whose state only the pair
//     holds; beside three honest peers the pair holds two votes of five, and its epochs count
//     for nothing. (Strangers as many as the honest peers still win: an open run
//     admits any number of keys.) A syncing peer votes too: had it not, two colluders sent
//     every honest peer after their epoch, and the honest peers, all syncing, left the vote to
//     them. The price: a wave of joiners more numerous than the swarm, reading the records
//     before any of them downloaded, would hold epoch 0 and train apart;
//   - samples accumulated toward the target at the global epoch: each peer at the global epoch
//     counts samplesAccumulated + samplesPerSecond * (now - time), i.e. extrapolated by its own
//     throughput since its report (a peer at an older epoch counts 0: it must resync first);
//   - the ETA of the next step: (target - samples) / (sum of samples/s at the global epoch);
//   - the decision of a peer at local epoch e: Resync (download the state) if the global epoch
//     is above e; Step if the samples reach the target; otherwise Accumulate. (hivemind lets a
//     peer one epoch behind go on; here that peer would have to take the state in a state round,
//     which on a home uplink costs more than the download over its faster downlink.)
// Guard against tiny batches (a known failure of the reference after restarts: thousands of
// epochs of a handful of samples): the extrapolated part may complete the batch only if the
// samples actually REPORTED at the global epoch are at least `minReportedFraction` of the target.
// Claims bounded by throughput (ours; hivemind trusts every count): at the global epoch a peer's
// rate counts at most
//     cap = maxRateOverMedian x the median of the positive rates of the live records there
// (no bound while none is positive), and, when this tracker saw that epoch begin, its samples,
// reported and extrapolated, at most
//     cap x (now - b + beginningSlack)
// with b the epoch's beginning as this tracker saw it (averaging/EpochClock.h: this peer's own
// step's end, or with delayed parameter updates its Step decision at the epoch before, or when
// the epoch became global here; never before that decision). That is what a peer computing at
// the cap can have computed since the epoch began; a PART's weight (weightBounds) takes
// allowedClockSkew as its slack. An epoch this tracker did not see begin (under way when it
// started; reached in a jump, until this peer's own step into it) is counted as reported. One peer
// claiming the whole target at once thus counts like a peer computing at the cap since the
// epoch began, not like the swarm. An honest peer faster than the cap is counted at the cap: the
// step comes later, on a larger batch, never on a smaller one. maxRateOverMedian = infinity
// turns the bound off (closed runs, whose peers the lead admitted).
//
// Times are seconds on the caller's clock (Unix time; records carry the sender's clock, and a
// record more than `allowedClockSkew` in the future is refused). Pure logic, no I/O, no clock of
// its own: tests inject `now`. Not thread-safe; owned by the swarm's control thread.
#include "averaging/EpochClock.h"
#include "averaging/ProgressShards.h"
#include "averaging/SwarmMessages.h"

#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace dedloc {

// The most samples one peer computes (and may claim, in a record or a PART's weight) in one epoch:
// twice the target batch. An honest peer stops there and waits for the step.
[[nodiscard]] constexpr long maxSamplesPerEpoch(long targetBatchSize) { return 2 * targetBatchSize; }

// A throughput claim above this (samples/s) is refused (see update()).
inline constexpr double MaxSamplesPerSecond = 1e6;

// Why `record` claims what no honest peer can: more than maxSamplesPerEpoch(targetBatchSize)
// accumulated, or more than MaxSamplesPerSecond; "" when it does not. Its signer made the claim
// (a DHT record is signed by its claimant), so a reader strikes that signer for it.
[[nodiscard]] std::string impossibleClaim(const ProgressRecord &record, long targetBatchSize);

struct TrackerOptions {
    long targetBatchSize = 4096;       // samples per global step
    double maxRateOverMedian = 8.0;    // rate cap, see above (>= 1; infinity: no bound)
    double minReportedFraction = 0.5;  // guard, see above
    double allowedClockSkew = 3.0;     // seconds (hivemind default)
    // Seconds added to the time since an epoch began in the bound above: a peer at the cap whose
    // step ended (or whose record arrived) a little before this one's.
    double beginningSlack = 1.0;
    // The run computes the next epoch's shares during the round (delayed parameter updates): an
    // epoch begins at this tracker's Step decision at the epoch before, not at its step's end.
    bool delayedUpdates = false;
    double matchmakingTime = 5.0;      // start looking for a group this long before the ETA
    std::string selfId;                // this peer's own record corroborates others, never needs to
};

struct GlobalProgress {
    long globalEpoch = 0;
    long reportedSamples = 0;        // as reported at the global epoch, each within its bound (above)
    double samplesAccumulated = 0.0; // extrapolated to `now`, each within its bound
    double samplesPerSecond = 0.0;   // summed over peers at the global epoch, each at most the cap
    double eta = 0.0;                // seconds from now to the target (0 when reached; inf if no throughput)
    int peers = 0;                   // live records
    int clientPeers = 0;
};

enum class StepDecision { Accumulate, Resync, Step };

class ProgressTracker final {
public:
    explicit ProgressTracker(TrackerOptions options);

    // Returns false (and keeps the stored one) when the record is older than the stored record of
    // that peer, already expired, malformed (negative counts, non-finite numbers), too far in
    // the future, or claims what no honest peer can: more than twice the target batch
    // accumulated, or more than MaxSamplesPerSecond.
    bool update(const ProgressRecord &record, double now);
    void remove(const std::string &peerId);
    // Forgets the records of peers for which `keep` is false, this peer's own excepted (a sharded
    // swarm's view after its shards change: averaging/ProgressShards.h).
    void keepOnly(const std::function<bool(const std::string &)> &keep);
    // The other shards of a sharded swarm, one tally each (chooseTallies), in place of those held.
    // The global epoch, its samples, its rate and the ETA count them beside the records: a
    // tally's epochs vote and corroborate as its records would, and at the global epoch its
    // samples and rate count within the same bounds as its peers' records would (each peer's
    // rate at most the cap, its samples at most the allowance, both at most what an honest peer
    // claims). The cap is the median of this shard's records' rates (a uniform sample of the
    // swarm). follow(), weightBounds(), expectedPeers() and liveRecords() see the records alone.
    void setShardTallies(std::vector<ShardTally> tallies) { m_tallies = std::move(tallies); }
    [[nodiscard]] const std::vector<ShardTally> &shardTallies() const { return m_tallies; }
    // Peers of the other shards that expectedPeers() would count: the tallies' peers that
    // average now at an epoch from `epoch` - `lag` to `epoch`, and those that do not train.
    [[nodiscard]] std::size_t expectedElsewhere(long epoch, long lag, double now) const;
    // Records stored, expired ones not yet forgotten included (update() forgets those).
    [[nodiscard]] std::size_t stored() const { return m_records.size(); }

    static constexpr long NotTraining = -1;
    // `localEpoch`: the asking trainer's epoch, or NotTraining (see the global epoch above).
    [[nodiscard]] GlobalProgress global(double now, long localEpoch = NotTraining) const;
    // The stored records that have not expired at `now` (one per peer).
    [[nodiscard]] std::vector<ProgressRecord> liveRecords(double now) const;
    [[nodiscard]] StepDecision decide(long localEpoch, double now) const;
    // The peers other than `self` expected in a group averaging at `epoch`: live records that
    // join averaging groups, neither paused nor syncing (downloading state), made at most
    // `maxAge` seconds before `now`, of trainers at `epoch` or up to `lag` epochs behind it, and
    // of peers that do not train (auxiliaries and reducing monitors follow the global epoch,
    // which they may observe a progress period late). A leader forms its group once all of them
    // joined (averaging/Matchmaker.h): one counted that never comes costs its whole window.
    [[nodiscard]] std::vector<std::string> expectedPeers(const std::string &self, long epoch, long lag, double maxAge,
                                                         double now) const;
    [[nodiscard]] bool shouldStartMatchmaking(long localEpoch, double now) const;
    // The most weight (samples) each sender's PARTs may count for in a gradient round of
    // `epoch` (AllReduceOptions::senderWeightBounds): for a live record there, its count
    // (extrapolated to `now`, within the allowance) plus what a peer at the cap computes in
    // allowedClockSkew, since its last record may lag its samples; for any other sender, the
    // allowance itself. Infinity where nothing bounds (no cap: closed runs or no positive rate).
    struct WeightBounds {
        std::map<std::string, double> perPeer;
        double others = std::numeric_limits<double>::infinity();
    };
    [[nodiscard]] WeightBounds weightBounds(long epoch, double now) const;
    // The highest epoch of a live trainer (other than this peer) that this tracker has seen
    // corroborated and held: at most one above another live record's own epoch (this peer's left
    // out), and reached by at least half of the other live trainers that are not paused (their
    // own epochs vote); or, while that trainer is the only one live, at most one above the
    // previous followed epoch plus one a second since it last advanced (steps between two
    // reads), so that a swarm down to one trainer is still followed. A stranger beside honest
    // trainers gets at most one epoch ahead of them, as in global(); a stranger that is the only
    // trainer is followed, as the lone-claimant exception believes it. Never more than one
    // above the highest state another live record claims to hold (ProgressRecord::stateEpoch;
    // no bound while none claims one), so strangers holding the vote cannot climb it. It gives
    // way by one epoch in one case: no other peer claims a state at it or above, and more of the
    // votes stand one epoch below it than at it or above (a stranger one epoch ahead beside the
    // first honest trainer won a tie, and this monitor, vouching for it, would tip every later
    // vote). Otherwise it never decreases: joiners below trainers that hold the state, and
    // trainers that leave, undo nothing.
    // -1 before any. A monitor publishes it (ProgressRecord::followedEpoch), because its own epoch
    // (that of its last state) lags: without it, a lagging monitor outvoted the one trainer left
    // in a swarm, and a joiner took epoch 0 for the swarm's and trained apart. Call it after
    // each read.
    long follow(double now);
    [[nodiscard]] long followedEpoch() const { return m_followed; }

private:
    // The live records' epochs as far as corroboration and the vote need them (see the global
    // epoch above). `vouched`: a record supports max(epoch, followedEpoch); otherwise its epoch
    // alone, this peer's record left out.
    struct EpochSupport {
        long top = -1, second = -1; // the highest supported epoch and the highest below it
        int topHolders = 0;         // supporters of `top`
        int live = 0;
        bool selfLive = false;      // this peer's own record is among them
        std::vector<long> votes;    // the supported epochs of the voters (see the global epoch)
        void add(long epoch, int holders = 1);
        // The highest epoch that at least half of `votes` reach; LONG_MAX when nobody votes.
        [[nodiscard]] long held() const;
        // Whether a live record's epoch is at most one above another supporter's (this peer's
        // own included).
        [[nodiscard]] bool withinOne(const ProgressRecord &r) const;
        // The same for `holders` supporters of `epoch` counted together (a tally's).
        [[nodiscard]] bool withinOne(long epoch, int holders) const;
        // withinOne, or no peer other than it and this one is live.
        [[nodiscard]] bool corroborates(const ProgressRecord &r, const std::string &selfId) const;
    };
    // `selfVote`: this trainer's local epoch, its vote; NotTraining: none.
    [[nodiscard]] EpochSupport epochSupport(double now, bool vouched = true, long selfVote = NotTraining) const;

    // What global() counts of a record at the global epoch, given the cap and the allowance.
    struct Counted {
        double rate = 0.0, reported = 0.0, extrapolated = 0.0;
    };
    [[nodiscard]] Counted counted(const ProgressRecord &r, double cap, double allowance, double now) const;
    // The same for a tally's peers at one epoch, each within the bounds of one peer.
    [[nodiscard]] Counted counted(const ShardTally &t, const EpochCount &c, double cap, double allowance,
                                  double now) const;
    // Raises the global epoch's candidates by the tallies' epochs (see global()).
    void tallyEpochs(const EpochSupport &support, long held, long &donorsMax, long &trainersMax, GlobalProgress &g,
                     double now) const;
    // The rate cap at `epoch` (see above); infinity while no live record there has a positive rate.
    [[nodiscard]] double rateCap(long epoch, double now) const;
    // The most samples a peer counts at `epoch` given `cap`, with `slack` seconds added to the
    // time since the epoch began; infinity when this tracker did not see the epoch begin.
    [[nodiscard]] double allowance(long epoch, double cap, double now, double slack) const;

    TrackerOptions m_options;
    long m_followed = -1;     // see follow()
    double m_followedAt = 0.0; // when m_followed last advanced (caller's clock)
    std::map<std::string, ProgressRecord> m_records;
    std::vector<ShardTally> m_tallies;
    double m_lastPrune = -1e300;
    // When each recent epoch began here: bookkeeping of the const views global() and decide(),
    // under the caller's lock.
    mutable EpochClock m_clock;
};

} // namespace dedloc
