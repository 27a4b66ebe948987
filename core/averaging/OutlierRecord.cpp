#include "averaging/OutlierRecord.h"

#include <algorithm>
#include <bit>

namespace dedloc {

OutlierRecord::OutlierRecord(OutlierRecordOptions options) : m_options(options)
{
    m_options.window = std::clamp(m_options.window, 1, 32);
    m_options.outliersToOffend = std::clamp(m_options.outliersToOffend, 1, m_options.window);
    m_options.outliersToBan = std::clamp(m_options.outliersToBan, m_options.outliersToOffend, m_options.window);
    m_options.maxSenders = std::max<std::size_t>(m_options.maxSenders, 1);
}

OutlierJudgement OutlierRecord::judge(const std::string &sender, bool outlier)
{
    std::lock_guard lock(m_mutex);
    auto it = m_entries.find(sender);
    if (it == m_entries.end()) {
        if (m_entries.size() >= m_options.maxSenders)
            forgetOldest();
        it = m_entries.emplace(sender, Entry{}).first;
    }
    auto &e = it->second;
    const std::uint32_t mask = m_options.window >= 32 ? ~0U : (1U << m_options.window) - 1U;
    e.verdicts = ((e.verdicts << 1U) | (outlier ? 1U : 0U)) & mask;
    e.judged = std::min(e.judged + 1, m_options.window);
    e.lastJudged = ++m_clock;
    OutlierJudgement j;
    j.outliers = std::popcount(e.verdicts);
    j.judged = e.judged;
    j.offence = outlier && j.outliers >= m_options.outliersToOffend;
    j.ban = outlier && j.outliers >= m_options.outliersToBan;
    return j;
}

std::size_t OutlierRecord::senders() const
{
    std::lock_guard lock(m_mutex);
    return m_entries.size();
}

void OutlierRecord::forgetOldest()
{
    const auto oldest = std::min_element(m_entries.begin(), m_entries.end(), [](const auto &a, const auto &b) {
        return a.second.lastJudged < b.second.lastJudged;
    });
    if (oldest != m_entries.end())
        m_entries.erase(oldest);
}

} // namespace dedloc
