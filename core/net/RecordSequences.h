#pragma once
// The sequence numbers of the records one DHT node publishes (net/DhtNode.h): strictly
// increasing per key, and above those of any earlier process of the same peer, because they
// start from the time in milliseconds (a reader keeps the highest sequence per peer and key).
//
// A key not published for `memorySeconds` is forgotten: the swarm publishes under keys of a ring
// of epochs (groups/<e>, mm/<e>/<schema>; averaging/SwarmMessages.h), many of them. A
// forgotten key starts again from the time, which is above its last sequence as long as that
// key got fewer than 1000 x memorySeconds publishes ahead of the clock (one per millisecond
// beyond real time), far more than any peer makes.
//
// Threads: not thread-safe (DhtNode guards it). Errors: none.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace dedloc {

class RecordSequences final {
  public:
    explicit RecordSequences(double memorySeconds = 600.0) : m_memory(memorySeconds) {}
    // The sequence of the next record under `key` published at `now` (Unix seconds): above the
    // key's last one and at least now in milliseconds. Forgets, at most every tenth of the memory,
    // the keys last published longer than memorySeconds before `now`.
    std::uint64_t next(const std::string &key, double now);
    // Keys remembered.
    [[nodiscard]] std::size_t size() const { return m_keys.size(); }

  private:
    struct Last {
        std::uint64_t sequence = 0;
        double published = 0.0;
    };
    double m_memory;
    double m_lastForget = 0.0;
    std::map<std::string, Last> m_keys;
};

} // namespace dedloc
