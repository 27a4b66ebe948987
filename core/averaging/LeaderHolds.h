#pragma once
// Leaders that held this peer (averaging/Matchmaker.h: accepted its join, then never began by the
// deadline they named, or sent a BEGIN it refused). A leader that crashed holds its followers
// once; one that holds the same peer again is doing it. Each hold is a strike in the peer's
// BanList (three within its window, a minute, ban), and a leader's `HoldsToBan`-th hold at
// distinct epochs within `HoldEpochs` epochs bans it however slow the steps (strikes expire
// between epochs of minutes). The count starts again after a ban.
// Memory: the epochs of holds within HoldEpochs of the latest one, per leader (pruned at each
// hold). Thread-safe.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dedloc {

class BanList;

class LeaderHolds final {
public:
    static constexpr std::size_t HoldsToBan = 3;
    static constexpr long HoldEpochs = 16;

    // `bans` null: holds are neither struck nor counted.
    explicit LeaderHolds(std::shared_ptr<BanList> bans);

    // `leaderId` held this peer at `epoch` (`reason`: the log's words); true if that banned it.
    bool held(const std::string &leaderId, long epoch, const std::string &reason, double now);

private:
    std::shared_ptr<BanList> m_bans;
    std::mutex m_mutex;
    std::map<std::string, std::vector<long>> m_epochs; // leader id -> epochs it held this peer at
};

} // namespace dedloc
