#pragma once
// Temporary bans of misbehaving senders (docs/PROTOCOL.md "Bans"; in the spirit of BTARD's
// exclusion of peers that send invalid data). Every rejected message is a strike against its
// sender (a peer id, or a connection id when the peer is unknown); `strikesToBan` strikes within
// `window` seconds ban the sender for `banSeconds`. A banned sender's messages are dropped
// unread, its join requests refused, and it is left out of groups.
// Bans escalate: a sender banned `bansForRun` times is banned for the rest of the run (a peer
// whose parts are clipped or refused again after a ban is not a passing fault).
// Bans outlive a restart: toJson()/restore() carry the active ones (sender, Unix time the ban
// ends, or "run") to a file the peer keeps beside its checkpoints, so a restarted volunteer does
// not admit again a peer it banned a minute ago.
// Times are seconds on the caller's clock (injected; tests use a fake). Thread-safe.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace dedloc {

struct BanOptions {
    int strikesToBan = 3;
    double window = 60.0;       // seconds
    double banSeconds = 300.0;  // seconds
    int bansForRun = 2;         // this many bans (the last included) ban for the run; 0: never
};

class BanList final {
public:
    explicit BanList(BanOptions options = {});

    // Records `count` strikes (one per rejected message) with their reason, logged once; returns
    // true if they ban the sender.
    bool strike(const std::string &sender, const std::string &reason, double now, int count = 1);
    // Bans the sender at once, as `strikesToBan` strikes would (the ban escalates alike), for an
    // offence proven over many rounds (averaging/OutlierRecord.h) rather than by one message; the
    // reason is logged. Returns false if it was banned already.
    bool ban(const std::string &sender, const std::string &reason, double now);
    [[nodiscard]] bool isBanned(const std::string &sender, double now) const;
    [[nodiscard]] int strikes(const std::string &sender, double now) const;
    // Counts the bans imposed so far (restored ones included): a change means toJson() changed.
    [[nodiscard]] std::uint64_t bansImposed() const;
    // The bans still active at `now`: {"<sender>": <end, Unix seconds> | "run", ...}.
    [[nodiscard]] nlohmann::json toJson(double now) const;
    // Restores what toJson() wrote; entries that are not a sender with a finite end or "run",
    // ended ones, and ends more than banSeconds after `now` (a file edited by hand) are skipped.
    // Returns the number restored.
    int restore(const nlohmann::json &bans, double now);

private:
    struct Entry {
        int strikes = 0;
        double firstStrike = 0.0;
        double bannedUntil = 0.0; // +infinity: for the run
        int bans = 0;             // bans imposed on this sender
    };
    // Bans e (the lock held): for banSeconds, or for the run at its bansForRun-th ban.
    void impose(Entry &e, const std::string &sender, double now);

    BanOptions m_options;
    mutable std::mutex m_mutex;
    std::map<std::string, Entry> m_entries;
    std::uint64_t m_bansImposed = 0;
};

} // namespace dedloc
