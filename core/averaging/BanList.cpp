#include "averaging/BanList.h"

#include "util/Log.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
    impose(e, sender, now);
    return true;
}

bool BanList::ban(const std::string &sender, const std::string &reason, double now)
{
    std::lock_guard lock(m_mutex);
    auto &e = m_entries[sender];
    if (e.bannedUntil > now)
        return false;
    log::warning("ban", sender.substr(0, 16) + ": " + reason);
    impose(e, sender, now);
    return true;
}

void BanList::impose(Entry &e, const std::string &sender, double now)
{
    e.strikes = 0;
    ++e.bans;
    ++m_bansImposed;
    if (m_options.bansForRun > 0 && e.bans >= m_options.bansForRun) {
        e.bannedUntil = std::numeric_limits<double>::infinity();
        log::warning("ban", sender.substr(0, 16) + " is banned for the rest of the run (ban " + std::to_string(e.bans)
                                + ")");
    } else {
        e.bannedUntil = now + m_options.banSeconds;
        log::warning("ban", sender.substr(0, 16) + " is banned for "
                                + std::to_string(static_cast<int>(m_options.banSeconds)) + " s");
    }
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

std::uint64_t BanList::bansImposed() const
{
    std::lock_guard lock(m_mutex);
    return m_bansImposed;
}

nlohmann::json BanList::toJson(double now) const
{
    std::lock_guard lock(m_mutex);
    auto out = nlohmann::json::object();
    for (const auto &[sender, e] : m_entries)
        if (std::isinf(e.bannedUntil))
            out[sender] = "run";
        else if (e.bannedUntil > now)
            out[sender] = e.bannedUntil;
    return out;
}

int BanList::restore(const nlohmann::json &bans, double now)
{
    if (!bans.is_object())
        return 0;
    std::lock_guard lock(m_mutex);
    int restored = 0;
    for (const auto &[sender, until] : bans.items()) {
        if (m_entries.size() > 10000) // the bound strike() keeps
            break;
        if (sender.empty() || sender.size() > 128)
            continue;
        double end = 0.0;
        if (until.is_string() && until.get<std::string>() == "run")
            end = std::numeric_limits<double>::infinity();
        else if (until.is_number() && std::isfinite(until.get<double>()))
            end = until.get<double>();
        if (end <= now || (std::isfinite(end) && end > now + m_options.banSeconds))
            continue;
        m_entries[sender].bannedUntil = end;
        ++m_entries[sender].bans;
        ++m_bansImposed;
        ++restored;
    }
    return restored;
}

} // namespace dedloc
