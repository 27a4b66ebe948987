#include "averaging/BanList.h"

#include "util/Log.h"

#include <algorithm>

namespace dedloc {

BanList::BanList(BanOptions options) : m_options(options) {}

bool BanList::strike(const std::string &sender, const std::string &reason, double now, int count)
{
    std::lock_guard lock(m_mutex);
    if (m_entries.size() > 10000) // bounded: forget the oldest strikes first
        std::erase_if(m_entries, [&](const auto &e) {
            return e.second.bannedUntil < now && now - e.second.firstStrike > m_options.window;
        });
    auto &e = m_entries[sender];
    if (e.bannedUntil > now)
        return false;
    if (e.strikes == 0 || now - e.firstStrike > m_options.window) {
        e.strikes = 0;
        e.firstStrike = now;
    }
    e.strikes += std::max(1, count);
    log::warning("ban", "rejected " + (count > 1 ? std::to_string(count) + " messages" : std::string("a message"))
                            + " from " + sender.substr(0, 16) + ": " + reason + " (" + std::to_string(e.strikes) + " of "
                            + std::to_string(m_options.strikesToBan) + " strikes)");
    if (e.strikes < m_options.strikesToBan)
        return false;
    e.bannedUntil = now + m_options.banSeconds;
    e.strikes = 0;
    log::warning("ban", sender.substr(0, 16) + " is banned for " + std::to_string(static_cast<int>(m_options.banSeconds))
                            + " s");
    return true;
}

bool BanList::isBanned(const std::string &sender, double now) const
{
    std::lock_guard lock(m_mutex);
    auto it = m_entries.find(sender);
    return it != m_entries.end() && it->second.bannedUntil > now;
}

int BanList::strikes(const std::string &sender, double now) const
{
    std::lock_guard lock(m_mutex);
    auto it = m_entries.find(sender);
    if (it == m_entries.end() || now - it->second.firstStrike > m_options.window)
        return 0;
    return it->second.strikes;
}

} // namespace dedloc
