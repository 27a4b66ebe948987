#include "averaging/EpochClock.h"

#include <algorithm>
#include <cmath>

namespace dedloc {

EpochClock::EpochClock(bool delayedUpdates, double settle) : m_delayedUpdates(delayedUpdates), m_settle(settle) {}

void EpochClock::sawForeignRecord(double now)
{
    if (std::isnan(m_firstForeign))
        m_firstForeign = now;
}

void EpochClock::sawGlobal(long epoch, double now)
{
    if (epoch <= m_highestGlobal)
        return;
    const bool seen = epoch == m_highestGlobal + 1 && now >= m_firstForeign + m_settle;
    m_highestGlobal = epoch;
    note(epoch, now, seen);
}

void EpochClock::ownStepEnded(long epoch, double now)
{
    note(epoch, now, true); // with delayed updates the decision's note came first and stays
    // A floor only after a step this peer decided itself: one that fell behind and catches up
    // (a replay) comes late, after the swarm's honest peers began. With delayed updates the
    // next epoch's shares are computed during the round: no floor at its end.
    if (!m_delayedUpdates && m_decided.count(epoch - 1))
        raiseFloor(epoch, now);
}

void EpochClock::decidedStep(long epoch, double now)
{
    if (m_decided.count(epoch))
        return; // the first decision counts
    m_decided.emplace(epoch, now);
    raiseFloor(epoch + 1, now);
    if (m_delayedUpdates)
        note(epoch + 1, now, true);
}

void EpochClock::raiseFloor(long epoch, double at)
{
    auto [it, fresh] = m_floor.try_emplace(epoch, at);
    if (!fresh)
        it->second = std::max(it->second, at);
}

double EpochClock::began(long epoch) const
{
    const auto it = m_began.find(epoch);
    if (it == m_began.end() || std::isnan(it->second))
        return std::numeric_limits<double>::quiet_NaN();
    const auto f = m_floor.find(epoch);
    return f == m_floor.end() ? it->second : std::max(it->second, f->second);
}

void EpochClock::note(long epoch, double at, bool seen)
{
    const auto [it, fresh] = m_began.try_emplace(epoch, seen ? at : std::numeric_limits<double>::quiet_NaN());
    if (!fresh && seen && std::isnan(it->second))
        it->second = at;
    const auto left = [this](const auto &entry) { return entry.first < m_highestGlobal - 2; };
    std::erase_if(m_began, left);
    std::erase_if(m_decided, left);
    std::erase_if(m_floor, left);
}

} // namespace dedloc
