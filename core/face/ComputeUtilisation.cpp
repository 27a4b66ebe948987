#include "face/ComputeUtilisation.h"

#include <algorithm>

namespace dedloc {

ComputeUtilisation::ComputeUtilisation(std::size_t window) : m_window(std::max<std::size_t>(1, window)) {}

void ComputeUtilisation::restart(double wallSeconds, double computeSeconds)
{
    m_start = std::pair{wallSeconds, computeSeconds};
}

std::optional<double> ComputeUtilisation::step(double wallSeconds, double computeSeconds)
{
    if (!m_start)
        return std::nullopt;
    const double wall = wallSeconds - m_start->first;
    const double compute = std::max(0.0, computeSeconds - m_start->second);
    m_start = std::pair{wallSeconds, computeSeconds};
    if (wall <= 0.0)
        return std::nullopt;
    m_intervals.emplace_back(wall, compute);
    if (m_intervals.size() > m_window)
        m_intervals.pop_front();
    return std::clamp(compute / wall, 0.0, 1.0);
}

std::optional<double> ComputeUtilisation::recent() const
{
    double wall = 0.0, compute = 0.0;
    for (const auto &[w, c] : m_intervals) {
        wall += w;
        compute += c;
    }
    if (wall <= 0.0)
        return std::nullopt;
    return std::clamp(compute / wall, 0.0, 1.0);
}

} // namespace dedloc
