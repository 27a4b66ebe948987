#pragma once
// A monitor's credit of every peer: the samples and steps of the step metrics it recorded from
// each (SwarmMetricsRecorder), kept as step ranges so that a peer can see which of its steps
// the monitor has and which it missed. The monitor publishes each peer's credit under
// runKey(run, "credit/" + peer id) (PROTOCOL.md "Credit"); the peer reads its own.
//
// Record (JSON object, at most MaxCreditRecordBytes):
//     {"peer_id": hex, "samples": int >= 0, "steps": int >= 0, "ranges": [[first, last], ...]}
// ranges: increasing, disjoint, first <= last, at most MaxCreditRanges (the newest kept; "steps"
// and "samples" still count the older ones).
// Errors: creditFromJson refuses (nullopt) anything else; add() ignores negative samples.
// Threads: not thread-safe (the recorder's mutex guards its ledger).
#include "face/Contribution.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dedloc {

inline constexpr std::size_t MaxCreditRecordBytes = 4096;

class CreditLedger final {
  public:
    // A (peer, step) recorded for the first time with the peer's samples of that step.
    void add(const std::string &peerId, long step, long long samples);
    [[nodiscard]] const MonitorCredit *find(const std::string &peerId) const;
    // The peers whose credit changed since the last call (at most `most`, the rest stay pending).
    [[nodiscard]] std::vector<std::string> takeChanged(std::size_t most);
    [[nodiscard]] std::size_t peers() const { return m_credit.size(); }

  private:
    std::map<std::string, MonitorCredit> m_credit;
    std::set<std::string> m_changed;
};

[[nodiscard]] nlohmann::json creditToJson(const std::string &peerId, const MonitorCredit &credit);
// The credit of `peerId` in a record signed by `monitorId`, or nullopt when malformed or about
// another peer.
[[nodiscard]] std::optional<MonitorCredit> creditFromJson(const std::string &payload, const std::string &peerId,
                                                          const std::string &monitorId, double at);
// What this peer counts over the steps `credit` covers, from its own per-step samples.
[[nodiscard]] OwnCreditCount countOwnCredit(const std::map<long, long long> &ownStepSamples, const MonitorCredit &credit);

} // namespace dedloc
