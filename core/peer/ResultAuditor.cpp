#include "peer/ResultAuditor.h"

#include "averaging/BanList.h"
#include "averaging/ResultAudit.h"
#include "util/Clock.h"
#include "util/Log.h"

#include <algorithm>
#include <chrono>

namespace dedloc {

bool checksResults(const GroupInfo &group, const AggregationSpec &aggregation, Compression codec)
{
    const auto senders = std::count_if(group.members.begin(), group.members.end(),
                                       [](const GroupMember &m) { return m.weight > 0.0; });
    return aggregation.rule == AggregationRule::CenteredClip && codec != Compression::Uniform8Bit
           && group.members.size() <= MaxCheckedMembers && senders >= 3;
}

ResultAuditor::ResultAuditor(const GroupMerger &merger, std::shared_ptr<BanList> bans, std::string self,
                             AggregationSpec aggregation, double delay)
    : m_merger(merger), m_bans(std::move(bans)), m_self(std::move(self)), m_aggregation(aggregation), m_delay(delay),
      m_lineAt(unixNow()), m_worker([this] { work(); })
{
}

ResultAuditor::~ResultAuditor()
{
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    m_worker.join();
    std::lock_guard lock(m_mutex);
    summarise(unixNow(), true);
}

void ResultAuditor::schedule(const GroupInfo &group)
{
    {
        std::lock_guard lock(m_mutex);
        enqueue({group, unixNow() + m_delay});
    }
    m_wake.notify_all();
}

void ResultAuditor::publishView(const GroupInfo &group, std::shared_ptr<const RoundEvidence> evidence, bool complete)
{
    if (m_merger.publishedChecks(group))
        return; // its merge did: the round's payloads need not be kept a second longer
    {
        std::lock_guard lock(m_mutex);
        const double now = unixNow();
        enqueue({group, now + 1.0, std::move(evidence), now + 1.0 + m_delay, {}, !complete});
    }
    m_wake.notify_all();
}

bool ResultAuditor::publish(const GroupInfo &group, const RoundEvidence &evidence, bool partial)
{
    if (m_merger.publishedChecks(group))
        return true; // its merge did
    const auto average = groupAverageDigest(group, m_merger.checkRecords(group));
    if (average.empty())
        return false;
    m_merger.publishChecks(group, average, evidence, partial);
    return true;
}

void ResultAuditor::work()
{
    std::unique_lock lock(m_mutex);
    while (!m_stop) {
        if (m_due.empty()) {
            m_wake.wait(lock);
            continue;
        }
        const double wait = m_due.front().at - unixNow();
        if (wait > 0.0) {
            m_wake.wait_for(lock, std::chrono::duration<double>(std::min(wait, 1.0)));
            continue;
        }
        auto due = std::move(m_due.front());
        m_due.pop_front();
        lock.unlock();
        const auto round = due.group.groupId;
        try {
            if (!due.view)
                audit(std::move(due));
            else if (!publish(due.group, *due.view, due.partial) && unixNow() < due.until) {
                due.at = unixNow() + 0.5; // the members' records are on their way: read again
                lock.lock();
                enqueue(std::move(due));
                continue;
            }
        } catch (const std::exception &e) {
            log::warning("check", "round " + round + ": " + e.what());
        }
        lock.lock();
    }
}

void ResultAuditor::enqueue(Due due)
{
    // In order of time: an item pushed in front of one due earlier would hold it back (rounds
    // every half second would keep the front always a second away).
    const auto later = std::find_if(m_due.begin(), m_due.end(), [&](const Due &d) { return d.at > due.at; });
    m_due.insert(later, std::move(due));
}

AuditCounts ResultAuditor::counts() const
{
    std::lock_guard lock(m_mutex);
    return m_total;
}

void ResultAuditor::count(CheckOutcome outcome)
{
    std::lock_guard lock(m_mutex);
    for (auto *c : {&m_total, &m_sinceLine}) {
        auto &n = outcome == CheckOutcome::Holds      ? c->held
                  : outcome == CheckOutcome::Fails    ? c->failed
                  : outcome == CheckOutcome::Disputed ? c->disputed
                                                      : c->undecided;
        ++n;
    }
}

void ResultAuditor::summarise(double now, bool last)
{
    const auto &c = m_sinceLine;
    if ((!last && now - m_lineAt < SummarySeconds) || (last && c.rounds == 0))
        return;
    const auto seconds = static_cast<long>(now - m_lineAt + 0.5);
    const auto span = seconds < 120 ? std::to_string(seconds) + " s" : std::to_string((seconds + 30) / 60) + " min";
    log::info("check", "result checks in the last " + span + ": " + std::to_string(c.rounds)
                           + " rounds, reducers held " + std::to_string(c.held) + ", failed " + std::to_string(c.failed)
                           + ", disputed " + std::to_string(c.disputed) + ", not judged "
                           + std::to_string(c.undecided));
    m_sinceLine = {};
    m_lineAt = now;
}

void ResultAuditor::audit(Due due)
{
    const auto &group = due.group;
    const double start = unixNow();
    const auto records = m_merger.checkRecords(group);
    log::debug("check", "round " + group.groupId + ": " + std::to_string(records.size()) + " check records read in "
                            + std::to_string(unixNow() - start) + " s, " + std::to_string(start - due.at) + " s late");
    auto verdicts = auditGroup(group, records, m_aggregation.radius);
    const bool final = !due.silent.empty();
    if (final) { // a second look: only at the reducers silent at the first
        std::erase_if(verdicts, [&](const AuditVerdict &v) {
            return std::find(due.silent.begin(), due.silent.end(), v.reducer) == due.silent.end();
        });
    } else if (!verdicts.empty()) {
        std::lock_guard lock(m_mutex);
        ++m_total.rounds;
        ++m_sinceLine.rounds;
    }
    std::vector<std::size_t> silent;
    for (auto &v : verdicts) {
        if (group.members[v.reducer].peerId == m_self)
            continue; // its own result is no news to it (nor struck)
        if (v.silent && !final) {
            silent.push_back(v.reducer);
            continue;
        }
        if (v.silent && m_bans->isBanned(group.members[v.reducer].peerId, unixNow()))
            continue; // its records are not read while it is banned: its silence proves nothing
        if (v.silent) {
            v.check.outcome = CheckOutcome::Fails;
            v.check.reason = "it published no check record of a round in which it reduced a shard";
        }
        judge(group, v);
    }
    std::lock_guard lock(m_mutex);
    if (!silent.empty()) {
        due.silent = std::move(silent);
        due.at = unixNow() + m_delay;
        enqueue(std::move(due));
    }
    summarise(unixNow(), false);
}

void ResultAuditor::judge(const GroupInfo &group, const AuditVerdict &v)
{
    const auto strike = [&](std::size_t member, const std::string &why) {
        const auto &peer = group.members[member].peerId;
        if (peer == m_self)
            return; // a member disputing this peer's view
        m_bans->strike(peer, why, unixNow());
        ++m_strikes;
    };
    const auto &reducer = group.members[v.reducer].peerId;
    const auto round = "round " + group.groupId + " (epoch " + std::to_string(group.epoch) + ")";
    count(v.check.outcome);
    switch (v.check.outcome) {
    case CheckOutcome::Fails:
        log::warning("check", round + ": the result of reducer " + reducer.substr(0, 8)
                                  + " fails the check: " + v.check.reason);
        strike(v.reducer, round + ": its result fails the check: " + v.check.reason);
        break;
    case CheckOutcome::Disputed: {
        const auto &member = group.members[v.check.disputes.front()].peerId;
        log::warning("check", round + ": member " + member.substr(0, 8) + " disputes the view of reducer "
                                  + reducer.substr(0, 8) + ": one of the two lies");
        strike(v.reducer, round + ": a member disputes its view of its shard");
        strike(v.check.disputes.front(), round + ": it disputes the view of reducer " + reducer.substr(0, 8));
        break;
    }
    case CheckOutcome::Holds:
        log::debug("check", round + ": the result of reducer " + reducer.substr(0, 8) + " holds");
        break;
    case CheckOutcome::Undecided:
        log::debug("check", round + ": reducer " + reducer.substr(0, 8) + " not judged: " + v.check.reason);
        break;
    }
}

} // namespace dedloc
