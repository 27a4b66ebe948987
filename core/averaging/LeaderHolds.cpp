#include "averaging/LeaderHolds.h"

#include "averaging/BanList.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

namespace dedloc {

LeaderHolds::LeaderHolds(std::shared_ptr<BanList> bans) : m_bans(std::move(bans)) {}

bool LeaderHolds::held(const std::string &leaderId, long epoch, const std::string &reason, double now)
{
    if (!m_bans)
        return false;
    bool banned = m_bans->strike(leaderId, "held this peer as a leader: " + reason, now);
    std::lock_guard lock(m_mutex);
    for (auto it = m_epochs.begin(); it != m_epochs.end();) {
        std::erase_if(it->second, [&](long e) { return std::abs(e - epoch) >= HoldEpochs; });
        it = it->second.empty() ? m_epochs.erase(it) : std::next(it);
    }
    auto &epochs = m_epochs[leaderId]; // distinct epochs: searches repeated at one epoch count once
    if (std::find(epochs.begin(), epochs.end(), epoch) == epochs.end())
        epochs.push_back(epoch);
    if (!banned && epochs.size() >= HoldsToBan)
        banned = m_bans->ban(leaderId, "held this peer as a leader at " + std::to_string(epochs.size())
                                           + " epochs within " + std::to_string(HoldEpochs), now);
    if (banned)
        m_epochs.erase(leaderId);
    return banned;
}

} // namespace dedloc
