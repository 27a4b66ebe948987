#include "monitor/CreditLedger.h"

namespace dedloc {

void CreditLedger::add(const std::string &peerId, long step, long long samples)
{
    if (samples < 0 || step < 0)
        return;
    auto &c = m_credit[peerId];
    auto &r = c.ranges;
    // Steps arrive in increasing order per peer (the recorder writes only newer ones); an older
    // or repeated one is not counted twice.
    if (!r.empty() && step <= r.back().second)
        return;
    c.samples += samples;
    ++c.steps;
    if (!r.empty() && step == r.back().second + 1) // extends the newest range
        r.back().second = step;
    else
        r.emplace_back(step, step);
    if (r.size() > MaxCreditRanges)
        r.erase(r.begin(), r.begin() + long(r.size() - MaxCreditRanges));
    m_changed.insert(peerId);
}

const MonitorCredit *CreditLedger::find(const std::string &peerId) const
{
    const auto it = m_credit.find(peerId);
    return it == m_credit.end() ? nullptr : &it->second;
}

std::vector<std::string> CreditLedger::takeChanged(std::size_t most)
{
    std::vector<std::string> out;
    for (auto it = m_changed.begin(); it != m_changed.end() && out.size() < most;) {
        out.push_back(*it);
        it = m_changed.erase(it);
    }
    return out;
}

nlohmann::json creditToJson(const std::string &peerId, const MonitorCredit &c)
{
    nlohmann::json ranges = nlohmann::json::array();
    for (const auto &[first, last] : c.ranges)
        ranges.push_back({first, last});
    return {{"peer_id", peerId}, {"samples", c.samples}, {"steps", c.steps}, {"ranges", ranges}};
}

std::optional<MonitorCredit> creditFromJson(const std::string &payload, const std::string &peerId,
                                            const std::string &monitorId, double at)
{
    if (payload.size() > MaxCreditRecordBytes)
        return std::nullopt;
    const auto j = nlohmann::json::parse(payload, nullptr, false);
    if (!j.is_object() || j.value("peer_id", std::string()) != peerId)
        return std::nullopt;
    const auto samples = j.find("samples"), steps = j.find("steps"), ranges = j.find("ranges");
    if (samples == j.end() || !samples->is_number_integer() || samples->get<long long>() < 0 || steps == j.end()
        || !steps->is_number_integer() || steps->get<long long>() < 0 || ranges == j.end() || !ranges->is_array()
        || ranges->size() > MaxCreditRanges)
        return std::nullopt;
    MonitorCredit c;
    c.monitorId = monitorId;
    c.samples = samples->get<long long>();
    c.steps = steps->get<long>();
    c.at = at;
    long previous = -1;
    long long covered = 0;
    for (const auto &r : *ranges) {
        if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer() || !r[1].is_number_integer())
            return std::nullopt;
        const long first = r[0].get<long>(), last = r[1].get<long>();
        if (first <= previous || last < first) // increasing and disjoint
            return std::nullopt;
        covered += last - first + 1;
        c.ranges.emplace_back(first, last);
        previous = last;
    }
    if (ranges->size() < MaxCreditRanges && covered != c.steps) // all ranges kept: they are the steps
        return std::nullopt;
    return c;
}

OwnCreditCount countOwnCredit(const std::map<long, long long> &own, const MonitorCredit &credit)
{
    OwnCreditCount count;
    if (credit.ranges.empty())
        return count;
    const long from = credit.ranges.front().first, through = credit.throughStep();
    for (auto it = own.lower_bound(from); it != own.end() && it->first <= through; ++it) {
        if (credit.recorded(it->first)) {
            count.samplesInRecordedSteps += it->second;
        } else if (it->second > 0) {
            ++count.stepsMissed;
            count.samplesMissed += it->second;
        }
    }
    return count;
}

} // namespace dedloc
