#pragma once
// The result check, run for the swarm (docs/PROTOCOL.md "Checked results"): a while after a
// round that checked results (the members' check records, with their sketches, must have
// arrived), this peer reads its group's check records, judges every reducer of its group
// (averaging/ResultAudit.h) and strikes in its ban list (averaging/BanList.h):
//   - a reducer whose check fails: a strike, with the reason;
//   - a lone dispute: a strike against each of the two (either could lie, and the liar, in every
//     dispute it makes, is banned first);
//   - a silent reducer (no check record while most senders say it counted them): read again
//     `delay` seconds later, and judged then, or struck if still silent. An honest reducer
//     publishes its record within a second or two of its round (its sketches, and a DHT put), also
//     where its own round was incomplete or it sent nothing (publishView); one that left right
//     after its round takes a strike it needs three of to be banned. A reducer could otherwise
//     return a false result and escape every check by publishing nothing.
// never this peer itself. Verdicts that hold are logged at debug level; every SummarySeconds
// (and when the auditor ends, if it judged anything since) one info line counts the verdicts.
//
// Threads: schedule() from any thread, never blocking; the audits run in order on a thread of the
// auditor's own. The destructor drops the audits not yet due and waits for a running one (its
// read is bounded by the DHT's own timeouts). Errors: none thrown; a failed read leaves the round
// unjudged.
#include "averaging/GroupMerge.h"
#include "averaging/ResultAudit.h"
#include "averaging/ResultCheck.h"
#include "averaging/RoundEvidence.h"
#include "averaging/SwarmMessages.h"
#include "compress/Compression.h"
#include "run/RunManifest.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace dedloc {

class BanList;

// Seconds between the end of a round and its audit: every member has published its record by
// then, unless it left.
inline constexpr double AuditDelay = 5.0;

// Whether a round of `group` checks results (AllReduceOptions::checkResults): gradient rounds
// of runs whose aggregation clips, in groups of at most MaxCheckedMembers with three senders or
// more, in a codec whose results' error is bounded (not uniform 8-bit: ResultCheck.h
// resultErrorBound). Every member decides alike from the BEGIN's member list and the manifest.
[[nodiscard]] bool checksResults(const GroupInfo &group, const AggregationSpec &aggregation, Compression codec);

// Seconds between the info lines that count the verdicts.
inline constexpr double SummarySeconds = 600.0;

// Verdicts counted since the last summary line (or, for counts(), since the auditor started).
struct AuditCounts {
    long rounds = 0;    // rounds audited (records read agreeing on an average, a reducer named)
    long held = 0;      // reducers whose result holds
    long failed = 0;
    long disputed = 0;  // lone disputes
    long undecided = 0; // reducers whose records were read but could not be judged
};

class ResultAuditor final {
  public:
    // `merger`, `bans` outlive it. `self`: this peer's id (never struck here).
    ResultAuditor(const GroupMerger &merger, std::shared_ptr<BanList> bans, std::string self,
                  AggregationSpec aggregation, double delay = AuditDelay);
    ~ResultAuditor();
    ResultAuditor(const ResultAuditor &) = delete;
    ResultAuditor &operator=(const ResultAuditor &) = delete;

    // Judges the reducers of `group`'s round `delay` seconds from now.
    void schedule(const GroupInfo &group);
    // For a member whose merge did not publish its check record of `group`'s round (an auxiliary
    // member, which holds no average of its own; one whose round was incomplete; one that took
    // part with weight 0): a second after the round, unless the merge has published it by then
    // (GroupMerger::publishedChecks), reads the group's average from its members' check records
    // (for up to `delay` seconds) and publishes its sketches under it (GroupMerger::publishChecks).
    // `complete`: the round was (AllReduceReport::complete); else its view alone goes out.
    void publishView(const GroupInfo &group, std::shared_ptr<const RoundEvidence> evidence, bool complete = true);
    // Strikes made so far (tests, status).
    [[nodiscard]] int strikes() const { return m_strikes.load(); }
    // Verdicts since it started. Any thread.
    [[nodiscard]] AuditCounts counts() const;

  private:
    struct Due {
        GroupInfo group;
        double at = 0.0;                          // Unix seconds
        std::shared_ptr<const RoundEvidence> view; // set: publish this view instead of judging
        double until = 0.0;                       // a view: the last time to try
        std::vector<std::size_t> silent;          // not empty: judge only these, silent before
        bool partial = false;                     // a view: of an incomplete round
    };
    void work();
    void enqueue(Due due); // in order of `at`; under m_mutex
    void audit(Due due);
    void judge(const GroupInfo &group, const AuditVerdict &verdict); // logs, counts and strikes
    void count(CheckOutcome outcome);
    void summarise(double now, bool last); // logs the counts since the last line; under m_mutex
    // false while the group's average is not in its records yet.
    bool publish(const GroupInfo &group, const RoundEvidence &evidence, bool partial);

    const GroupMerger &m_merger;
    std::shared_ptr<BanList> m_bans;
    std::string m_self;
    AggregationSpec m_aggregation;
    double m_delay;
    std::atomic<int> m_strikes{0};
    mutable std::mutex m_mutex;
    AuditCounts m_total;       // since it started
    AuditCounts m_sinceLine;   // since the last summary line
    double m_lineAt = 0.0;     // Unix seconds of the last summary line (or the start)
    std::condition_variable m_wake;
    std::deque<Due> m_due; // in order of `at`
    bool m_stop = false;
    std::thread m_worker; // last: started once the rest exists
};

} // namespace dedloc
