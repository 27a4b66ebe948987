#pragma once
// Which senders a peer's reducer found far from the others persistently (docs/PROTOCOL.md
// "Robust aggregation"). CenteredClip bounds what any sender moves a shard by in every round; its
// verdict that a sender's parts were outliers (AllReduceReport::clipVerdicts) names the sender but
// is weak evidence alone: an honest trainer's gradient of a small batch lies far from the others'
// now and then (one batch touches rows of the embedding no other batch did). Far-off parts in
// round after round are no chance. Over the sender's last `window` verdicts at this peer (this one
// included), an outlier verdict is
//
//     an offence (one strike, averaging/BanList.h)   when at least `outliersToOffend` are outliers
//     a ban at once                                   when at least `outliersToBan` are
//
// With the defaults (window 6, 3 to offend, 4 to ban) a sender far off in every round offends at
// its 3rd verdict and is banned at its 4th, however far apart its rounds are (steps minutes apart
// would never put three strikes in BanList's 60 s); one far off every other round offends from its
// 5th and is banned by BanList's three strikes when its rounds come fast enough, and is clipped
// meanwhile. An honest sender with independent isolated outliers of probability p a verdict
// offends with probability about 10 p^3 a verdict (C(5,2) p^2 of the other five, times p) and is
// banned with about 10 p^4.
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
    int outliersToBan = 4;    // ... that make it a ban at once (at least outliersToOffend)
    std::size_t maxSenders = 4096;
};

// What one verdict made of a sender's record.
struct OutlierJudgement {
    bool offence = false; // strike the sender
    bool ban = false;     // ban the sender at once (implies offence)
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
