#include "net/RecordSequences.h"

#include <algorithm>

namespace dedloc {

std::uint64_t RecordSequences::next(const std::string &key, double now)
{
    if (now - m_lastForget >= m_memory / 10.0) {
        std::erase_if(m_keys, [&](const auto &k) { return now - k.second.published > m_memory; });
        m_lastForget = now;
    }
    auto &last = m_keys[key];
    last.sequence = std::max(last.sequence + 1, static_cast<std::uint64_t>(std::max(0.0, now) * 1000.0));
    last.published = now;
    return last.sequence;
}

} // namespace dedloc
