#pragma once
// Which senders a peer's reducer found far from the others persistently (docs/PROTOCOL.md
// "Robust aggregation"). CenteredClip bounds what any sender moves a shard by in every round; its
// verdict that a sender's parts were outliers (AllReduceReport::clipVerdicts) names the sender but
// is weak evidence alone: an honest trainer's gradient of a small batch lies far from the others'
// now and then (early in training one batch touches rows of the embedding no other batch did; a
// clean soak of four trainers of the tiny run saw 4 such verdicts in about 2 900, one trainer
// struck three times and banned). Far-off parts in round after round are no chance:
//
//     a verdict is an offence  <=>  it says "outlier" and at least `outliersToOffend` of the
//                                   sender's last `window` verdicts here (this one included) do
//
// With the defaults (3 of 6) a sender far off in every round offends from its 3rd verdict on (three
// offences ban it, averaging/BanList.h: banned at its 5th round); one far off every other round
// offends from its 5th; an honest sender with isolated outliers (probability p each, independent)
// offends with probability about 20 p^3 per verdict (2e-8 at p = 1e-3).
//
// Threads: any (a mutex). Memory: at most `maxSenders` senders, the one judged least recently is
// forgotten first (a sender forgotten starts over). Errors: none.
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace dedloc {

struct OutlierRecordOptions {
    int window = 6;           // verdicts remembered per sender (at most 32)
    int outliersToOffend = 3; // outliers among them that make an outlier verdict an offence
    std::size_t maxSenders = 4096;
};

// What one verdict made of a sender's record.
struct OutlierJudgement {
    bool offence = false; // strike the sender
    int outliers = 0;     // outlier verdicts among its last `judged` (this one included)
    int judged = 0;       // verdicts remembered (at most window)
};

class OutlierRecord final {
public:
    explicit OutlierRecord(OutlierRecordOptions options = {});

    // Records one round's verdict on `sender` (a peer id).
    OutlierJudgement judge(const std::string &sender, bool outlier);
    [[nodiscard]] std::size_t senders() const;

private:
    struct Entry {
        std::uint32_t verdicts = 0; // bit k: the verdict k rounds ago was "outlier"
        int judged = 0;
        std::uint64_t lastJudged = 0; // m_clock at its latest verdict
    };
    void forgetOldest();

    OutlierRecordOptions m_options;
    mutable std::mutex m_mutex;
    std::map<std::string, Entry> m_entries;
    std::uint64_t m_clock = 0;
};

} // namespace dedloc
