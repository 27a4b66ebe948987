#pragma once
// A second averaging level above the groups (docs/PROTOCOL.md "Merging groups"). When one epoch
// averaged in several groups (more peers than a group holds, or matchmaking views that split the
// swarm), the members of each group fetch the other groups' averages, and every peer applies the
// same weighted mean of all of them: one model at any swarm size.
//
// Once its group has formed, a member announces it (a GroupRecord without digest: the round is
// running), so that every group of the epoch knows early which others to wait for.
// After a complete round, a member of group G, whose batch holds W_G samples, keeps G's average
// U_G as encoded on the wire (averaging/AveragedUpdate.h) on its service socket
// (PeerService::addGroupUpdate) and publishes a signed GroupRecord under
// groupsKey(run, epoch), in place of its announcement. It then reads that key until every
// group announced has its average recorded and the groups seen hold every peer expected at this
// epoch, or its wait ends; fetches each other group's average from one of the
// members that serve it (this peer's id picks which, so that a group's downloads spread over its
// members); checks it against the digest that most of that group's records claim; and replaces
// its gradient by
//     g = sum_G (W_G / W) decode(U_G),    W = sum_G W_G,
// summed in double precision in the order of the group ids, its own group included. Peers that
// merge the same set of groups hold bitwise identical results (the same inputs and operations in
// the same order on one kind of CPU), so the epoch applies one step, as if one group had averaged
// every gradient (the weights are samples, as within a group). Peers whose views of the set
// differ hold different states: the state digests in progress records show it
// (averaging/ModelAgreement.h).
// Sealing the merge: which groups make up the epoch's step must be the same set for every peer,
// though each reads the records at another moment. A peer whose wait ends (and that has seen
// another group, expects more peers than one group holds, or more than the groups it saw hold)
// without having seen a seal publishes one: its record again, now listing the groups it saw
// complete, confirmed by two members' records each (GroupRecord::seal; its own group too only
// when so confirmed: it waits for that, within its wait). Every peer that saw or made a seal
// reads again `sealSettle` seconds later and merges exactly the groups of the best seal it then
// sees: the largest sealed weight, then the most groups, then the smallest sealer id. Seals are only made by peers that saw none, so
// they are all published within one DHT propagation delay P of the first one, and every final
// read, made at least `sealSettle` after the first seal, sees all of them if sealSettle >= 2P:
// every peer picks the same seal. A seal counts only where each group it names is complete in
// the reader's own records with the weight and digest the seal says: a forged seal neither
// stops a peer from sealing nor is merged (the best seal is waited for up to `fetchTimeout`
// while its records may be on their way, then passed over). A peer whose group the
// seal leaves out (its round ended after the seal) applies the sealed groups' merge without
// its own: one model, its batch lost to this step.
// A group counts only when at least two of its members sign records that agree on it (a group
// has two members at least), with a weight of at most `maxGroupWeight` per member.
// Cost: for k groups a peer downloads k - 1 averages (its downlink), and the members of a group
// together serve each other member of the swarm once: about k - 1 averages each on their uplinks.
// The agreement (record book, seals, asking members for a seal a peer's reads missed) is in
// averaging/GroupSeal.h and averaging/SealRelay.h.
// Threads: merge() on the averaging thread; the DHT and the service are thread-safe. Errors:
// none thrown for the network or bad records (they are skipped, with the reason in the result).
#include "averaging/AveragedUpdate.h"
#include "averaging/SketchRecord.h"
#include "averaging/SwarmMessages.h"
#include "net/DhtNode.h"

#include <array>
#include <atomic>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dedloc {

class BanList;
class DataPlaneSecurity;
class RoundEvidence;
class PeerService;
struct SealChoice;

// SHA-256 (64 hex digits) of an update's header and bytes: equal digests, equal updates.
[[nodiscard]] std::string updateDigest(const AveragedUpdate &update);

// A group as the records of its members describe it: the weight, size and digest claimed by
// most of them (ties: the smaller digest), the members that serve it, and how many agree.
struct GroupView {
    std::string groupId;
    bool forming = false;               // announced only: its round has not ended (no claim yet)
    long weight = 0;
    std::size_t members = 0;
    std::string digest;
    std::size_t agreeing = 0;           // records claiming exactly (weight, members, digest)
    std::vector<GroupRecord> servers;   // agreeing records with an endpoint
};
// The groups of `epoch` in `records`, sorted by group id: a group with records of at least two
// members is listed, complete when at least two of them claim the same average (and it is at
// most `maxGroupWeight` per member: a heavier one is left out), forming otherwise (its round has
// not ended for most of them), with the largest size its records claim. A group that is not
// complete, where no member claims an average and fewer than two of its `n` members have not
// recorded that their round ended without one (GroupRecord::ended), is left out: no two members
// can agree on an average any more, so nobody waits for it.
[[nodiscard]] std::vector<GroupView> groupViews(const std::vector<GroupRecord> &records, long epoch,
                                                double maxGroupWeight);

// The weighted mean of decoded group averages (`weights[i]` for `averages[i]`, in this order):
// sum_i (w_i / sum w) x_i in double, rounded to float once. Throws Error for mismatched sizes.
[[nodiscard]] std::vector<float> mergeAverages(const std::vector<std::vector<float>> &averages,
                                               const std::vector<long> &weights);

struct MergeSelf {
    std::string peerId;
    std::string runId;
};

struct MergeOptions {
    // Seconds it waits at least for the other groups' records, or this share of its own round's
    // seconds if longer, when the swarm is larger than one group, another group was seen or the
    // groups seen hold fewer peers than expected...
    double minWait = 2.0;
    double roundShare = 1.0;
    // ... and otherwise (a swarm that one group can hold, whose matchmaking views may still have
    // split it) this long. A group that two of its members announced is waited for up to
    // `formingWait` seconds in all, or its round's seconds if longer (merge: this peer's own
    // round; adopt: its recent rounds): its members may decide to step a progress period later.
    double splitWait = 0.5;
    double formingWait = 15.0;
    std::size_t targetGroupSize = 16; // MatchmakingOptions::targetGroupSize
    double sealSettle = 1.0;     // seconds between seeing (or making) a seal and reading the seals
    double fetchTimeout = 3.0;   // seconds without progress before a server is given up, and
                                 // for records a seal names to arrive
    double maxGroupWeight = 0.0; // samples per member a group may claim (> 0), e.g. 2 x target batch
    // Tests only: false publishes no check record (a reducer hiding its view, ResultAuditor.h).
    bool publishChecks = true;
};

struct MergeResult {
    std::vector<float> average;  // the merged gradient (empty: nothing merged, keep the group's)
    long weight = 0;             // W: samples of every merged group's batch
    std::size_t groups = 1;      // merged groups (this peer's own included when it was merged)
    std::size_t peers = 0;       // members of the merged groups
    bool ownMerged = true;       // false: a seal left this peer's group out of the step
    bool sealed = false;         // the set came from a seal (every peer of the epoch merges it)
    std::string note;            // groups seen but not merged and why ("" when none)
};

class GroupMerger final {
public:
    // `service` null in client mode: it fetches but serves nothing. `security` null: plaintext
    // (tests). All must outlive it.
    GroupMerger(DhtNode &dht, PeerService *service, MergeSelf self, MergeOptions options,
                std::shared_ptr<const DataPlaneSecurity> security = nullptr,
                std::shared_ptr<const BanList> bans = nullptr);
    ~GroupMerger(); // waits for the publications in flight (at most 3 s each, and the sketches)
    GroupMerger(const GroupMerger &) = delete;
    GroupMerger &operator=(const GroupMerger &) = delete;

    // Announces `group` as formed, its round about to run: published on a background thread
    // (at most 3 tries of 1 s), which merge() waits for; merge() publishes its record the same way, and
    // the next announcement (and the destructor) wait for that. Best effort.
    void announce(const GroupInfo &group);

    // Whether some group of `epoch` has formed and its round has not ended (announced by two
    // members, no average recorded): a peer of that epoch still looking for its group, or in
    // one, takes its step instead of resynchronising to the swarm's next epoch. Reads the DHT at
    // most every half second (a cached answer in between). Any one thread.
    [[nodiscard]] bool groupsStillRunning(long epoch);

    // After a complete round of `group` whose average is `own` (weight own.batchSamples):
    // publishes this group's record, waits for the others while the groups seen hold fewer
    // than `expectedPeers()` or some announced group has no average yet, agrees on the set
    // (sealing, above) and merges. Returns weight and groups 1 with an empty average when the
    // step is this group's own average alone. `evidence` (rounds that check results): the round's
    // sketches under the seed of the average's digest are published as publishChecks() does, on
    // a thread of their own (neither this merge nor the next waits for them; the destructor does).
    [[nodiscard]] MergeResult merge(const GroupInfo &group, const std::shared_ptr<const AveragedUpdate> &own,
                                    const std::function<std::size_t()> &expectedPeers, double roundSeconds,
                                    const std::atomic<bool> &stop,
                                    const std::shared_ptr<const RoundEvidence> &evidence = nullptr);

    // The check records of `group`'s round (SketchRecord.h) from peers this peer admits (neither
    // banned nor, in closed runs, refused), as read now: for its result check
    // (averaging/ResultAudit.h). Records that do not parse are logged and skipped. Any thread.
    [[nodiscard]] std::vector<CheckRecord> checkRecords(const GroupInfo &group) const;
    // Publishes this peer's sketches of `group`'s round under the seed of `digest`, the group's
    // average (its own, or for a member without one, an auxiliary peer that reduced a shard but
    // sent nothing, the one its members' check records claim: ResultAudit.h groupAverageDigest),
    // so that the others judge its view and its own sketches dispute theirs. Blocks for the
    // sketches (6-9 ms per million elements) and the DHT put (3 tries of 1 s). Any thread.
    // `partial`: its own round was incomplete: the record holds its view alone (CheckRecord::partial).
    void publishChecks(const GroupInfo &group, const std::string &digest, const RoundEvidence &evidence,
                       bool partial = false) const;
    // Whether this peer's check record of `group`'s round is out, or on its way (merge, or
    // publishChecks, for one of its last 64 rounds). Any thread.
    [[nodiscard]] bool publishedChecks(const GroupInfo &group) const;

    // For a peer of `epoch` without a complete round (its search found no group, or its round
    // lost a part): waits as merge() does, publishes nothing (a member of `round` only that its
    // round ended without an average: GroupRecord::ended), and takes the best seal it can
    // check (else the complete groups it sees): the merge every member of those groups applies,
    // `elements` values, with ownMerged false. An empty average (groups 0) when no group of the
    // epoch could be fetched: the peer then steps on its own gradient as before. `round`: the
    // group whose round lost a part (empty groupId: none), counted as this peer's own while it
    // waits (not another group to wait for) and merged only where a seal or two of its members'
    // records show it complete; where it holds `expectedPeers()` or more and the first read of
    // the records shows no other group of the epoch, the wait ends there (the count may be low
    // where records arrive late: the read is what rules another group out).
    // `roundSeconds`: how long this peer's recent rounds took (0: unknown); a group its members
    // announced is waited for that long (formingWait at least), since its round runs as long.
    [[nodiscard]] MergeResult adopt(long epoch, std::uint64_t elements,
                                    const std::function<std::size_t()> &expectedPeers, const std::atomic<bool> &stop,
                                    const GroupInfo &round = {}, double roundSeconds = 0.0);

private:
    struct Awaited {
        std::vector<GroupView> views;
        bool others = false; // another group seen, or more peers expected than one group holds
        bool sealed = false; // a seal this peer can check was seen
        std::map<std::string, GroupRecord> book; // by peer id: the most informed record read
    };
    static constexpr double RecordSeconds = 120.0; // a group record's lifetime on the DHT
    static constexpr std::size_t MaxSealAsks = 3;  // members asked for their seal (SealRelay.h)
    [[nodiscard]] std::vector<GroupRecord> readRecords(const std::string &key) const;
    [[nodiscard]] std::vector<GroupRecord> admitted(const std::vector<SignedRecord> &signed_) const;
    // Whether a record of this signer counts: not banned and, in a closed run, admitted.
    [[nodiscard]] bool admits(const SignedRecord &record, double now) const;
    void publishRecord(const std::string &key, const std::string &payload) const;
    void publishCheckRecord(CheckRecord mine) const; // notes it published (publishedChecks), then puts it
    // `roundSeconds` sets the wait for missing peers (MergeOptions), `formingSeconds` the wait
    // for an announced group's round (formingWait at least).
    [[nodiscard]] Awaited awaitGroups(const std::string &key, const GroupRecord &mine, const GroupInfo &group,
                                      const std::function<std::size_t()> &expectedPeers, double roundSeconds,
                                      double formingSeconds, const std::atomic<bool> &stop) const;
    [[nodiscard]] std::vector<GroupView> agreeOnGroups(const std::string &key, GroupRecord mine, Awaited awaited,
                                                       const std::atomic<bool> &stop, MergeResult &result);
    void publishSeal(const std::string &key, GroupRecord &mine, Awaited &awaited);
    [[nodiscard]] std::optional<SealChoice> pickSeal(const std::string &key, const GroupRecord &mine,
                                                     std::map<std::string, GroupRecord> &book, double deadline,
                                                     const std::atomic<bool> &stop, std::string *why) const;
    [[nodiscard]] std::optional<SealChoice> askMembers(const std::string &key, const GroupRecord &mine,
                                                       std::map<std::string, GroupRecord> &book,
                                                       const std::atomic<bool> &stop, std::string *why) const;
    struct OwnAverage {
        const AveragedUpdate *update = nullptr; // null: this peer has no complete round
        std::string digest;
        long epoch = 0;
        std::uint64_t elements = 0;
    };
    void mergeViews(const std::vector<GroupView> &views, const GroupInfo &group, const OwnAverage &own,
                    const std::atomic<bool> &stop, MergeResult &result) const;
    [[nodiscard]] std::optional<AveragedUpdate> fetchAverage(const GroupView &view, long epoch, std::uint64_t elements,
                                                             const std::atomic<bool> &stop, std::string *why) const;

    DhtNode &m_dht;
    PeerService *m_service;
    MergeSelf m_self;
    MergeOptions m_options;
    std::shared_ptr<const DataPlaneSecurity> m_security;
    std::shared_ptr<const BanList> m_bans;
    std::future<void> m_announcing;
    std::vector<std::future<void>> m_checking; // sketches of merged rounds being published
    mutable std::mutex m_checkedMutex;
    mutable std::deque<std::string> m_checked; // group ids of the rounds whose check record is out
    std::mutex m_runningMutex;
    long m_runningEpoch = -1;
    double m_runningReadAt = 0.0;
    bool m_running = false;
};

} // namespace dedloc
