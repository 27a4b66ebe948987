#pragma once
// Temporary bans of misbehaving senders (docs/PROTOCOL.md "Bans"; in the spirit of BTARD's
// exclusion of peers that send invalid data). Every rejected message is a strike against its
// sender (a peer id, or a connection id when the peer is unknown); `strikesToBan` strikes within
// `window` seconds ban the sender for `banSeconds`. A banned sender's messages are dropped
// unread, its join requests refused, and it is left out of groups.
// Times are seconds on the caller's clock (injected; tests use a fake). Thread-safe.
#include <map>
#include <mutex>
#include <string>

namespace dedloc {

struct BanOptions {
    int strikesToBan = 3;
    double window = 60.0;       // seconds
    double banSeconds = 300.0;  // seconds
};

class BanList final {
public:
    explicit BanList(BanOptions options = {});

    // Records `count` strikes (one per rejected message) with their reason, logged once; returns
    // true if they ban the sender.
    bool strike(const std::string &sender, const std::string &reason, double now, int count = 1);
    [[nodiscard]] bool isBanned(const std::string &sender, double now) const;
    [[nodiscard]] int strikes(const std::string &sender, double now) const;

private:
    struct Entry {
        int strikes = 0;
        double firstStrike = 0.0;
        double bannedUntil = 0.0;
    };
    BanOptions m_options;
    mutable std::mutex m_mutex;
    std::map<std::string, Entry> m_entries;
};

} // namespace dedloc
