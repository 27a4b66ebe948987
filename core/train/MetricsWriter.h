#pragma once
// Metrics as JSON lines: one object per event (an optimizer step, a validation; in a swarm also a
// round of a peer that reduces without training, and a catch_up when a state download or
// replayed updates moved the epoch), appended to a file and flushed per line (so `tail -f` and a
// crash both see whole lines). Format (docs/METRICS.md):
//   {"event":"step","time":<unix s>,"peer_id":"..","role":"trainer","step":N,"samples":N,
//    "loss":x,"samples_per_s":x,"lr":x,"grad_norm":x,"applied":true}
//   {"event":"validation","time":..,"peer_id":..,"role":..,"step":N,"val_loss":x}
//   {"event":"catch_up","time":..,"peer_id":..,"role":..,"step":N,"from":N,"how":"downloaded"}
//   {"event":"memory","time":..,"peer_id":..,"role":"monitor","rss_mib":x,"heap_mib":x}
// Later versions add fields and events; readers must ignore what they do not know.
// Threads: write() from any thread (a peer's worker writes steps, its control loop memory).
#include "util/LineAppender.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <mutex>
#include <string>

namespace dedloc {

class MetricsWriter final {
public:
    // Opens for appending, creating the directory; throws dedloc::Error if it cannot. An empty
    // path writes nothing.
    MetricsWriter(const std::filesystem::path &file, std::string peerId, std::string role);
    ~MetricsWriter();
    MetricsWriter(const MetricsWriter &) = delete;
    MetricsWriter &operator=(const MetricsWriter &) = delete;

    // Adds time, peer_id and role, then writes the object as one line. A write error (full
    // disk) is logged once and metrics are dropped; training goes on.
    void write(const std::string &event, nlohmann::json fields);

private:
    std::mutex m_mutex; // guards m_out and m_failed
    LineAppender m_out;
    std::string m_peerId;
    std::string m_role;
    bool m_failed = false;
};

} // namespace dedloc
