#pragma once
// A reachable peer's service socket: one ZeroMQ ROUTER, served by its own thread, answering
// matchmaking joins while this peer leads a group, and state downloads while it is a state
// donor (docs/PROTOCOL.md "Matchmaking", "State sharing"; messages in averaging/SwarmMessages.h).
// Because the thread is separate from training and averaging, a donor serves state even in the
// middle of a round, and a leader answers joins while it computes.
//
// Leader side: openGather() starts accepting joins for one (epoch, schema) up to `capacity`
// followers until `deadline`; the matchmaker then calls begin() (BEGIN to every follower) or
// disband(). Joins for another epoch or schema, from banned peers, or when nothing is gathered
// are refused at once, so a follower never waits on a peer that is not leading.
// Donor side: setState() publishes a snapshot (and addUpdate() the averaged steps since); the two newest are kept, and an older one stays
// pinned while a download reads it (a `state?` offered it or a `part?` asked for it within the
// pin time, 30 s), at most two such, so that a download on a slow link gets one consistent
// snapshot from start to end however many steps the donor takes meanwhile.
//
// Security (net/DataPlaneSecurity.h): with one, the ROUTER is a CURVE server behind its own
// context's ZAP handler (closed runs: only peers with a valid access token get through the
// handshake), and a join is accepted only if its key "k" is the key of the connection it came on.
//
// Threads: all methods are thread-safe and never block on the network. The destructor stops
// and joins the thread (within one poll interval, 20 ms).
// Errors: dedloc::Error if the ROUTER cannot bind.
#include "averaging/BanList.h"
#include "averaging/SwarmMessages.h"
#include "averaging/UpdateArchive.h"

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dedloc {

class DataPlaneSecurity;

// Replies the service queues for one connection (ZeroMQ's send high-water mark): a client that
// asks without reading gets the first ones, the rest are dropped, so requests of a few bytes
// cannot make the service hold hundreds of MiB of state parts for it.
inline constexpr int ServiceSendQueue = 8;

struct GatherSpec {
    long epoch = 0;
    std::string schema;
    std::size_t capacity = 15;  // followers (target group size - 1)
    double deadline = 0.0;      // Unix seconds; told to followers so they know how long to wait
};

struct StateSnapshot {
    long epoch = 0;
    std::vector<float> values;  // Trainer::stateFlat() layout
};

class PeerService final {
public:
    // `security` null: plaintext (unit tests only; the swarm always passes one). `bans` null:
    // a list of its own; the swarm passes the one its matchmaking and all-reduce rounds strike.
    PeerService(std::string runId, const std::string &bindAddress = "tcp://127.0.0.1:*",
                std::uint64_t partElements = 128 * 1024, std::shared_ptr<const DataPlaneSecurity> security = nullptr,
                std::shared_ptr<BanList> bans = nullptr);
    ~PeerService();
    PeerService(const PeerService &) = delete;
    PeerService &operator=(const PeerService &) = delete;

    // The endpoint others connect to: the bound one, or the one given to advertise().
    [[nodiscard]] std::string endpoint() const;
    // Others reach this service at `endpoint` ("tcp://host:port": a router's port forward or a
    // mapped port), not at the bound address. Call before endpoint() is read by other threads.
    void advertise(std::string endpoint);

    void openGather(const GatherSpec &spec);
    // Stops accepting joins if nobody has joined yet and returns true; otherwise keeps the
    // gather (this peer must lead its followers) and returns false.
    bool closeGatherIfEmpty();
    [[nodiscard]] std::vector<JoinRequest> followers() const;
    // Sends BEGIN to every accepted follower that `group` lists as it joined, and closes the
    // gather; one that joined (or joined again, saying otherwise) after the leader read the
    // followers gets DISBAND instead: a BEGIN it would refuse would count as a hold against an
    // honest leader (averaging/LeaderHolds.h).
    void begin(const GroupInfo &group);
    // Sends DISBAND (with the reason and, if given, the leader to ask instead) to every accepted
    // follower and closes the gather.
    void disband(const std::string &why, const Declaration *askInstead = nullptr);

    void setState(std::shared_ptr<const StateSnapshot> snapshot);
    // How long a snapshot stays pinned after a download's last request for it (seconds; 30).
    void setSnapshotPin(double seconds);
    // Tests only (the hostile peer of tests/): rewrites the values of each state part before it
    // is sent, so that this donor serves another state than the one its offer and digest name.
    void setPartTamper(std::function<void(std::span<float>)> tamper);
    [[nodiscard]] long stateEpoch() const;  // -1 without state
    // The newest snapshot's epoch and SHA-256 (StateInfo::digest), {-1, ""} without state. The
    // hash (about 40 ms for 15 MB) is computed once per snapshot, outside the service's lock;
    // any thread (the control thread publishes it in the progress record).
    [[nodiscard]] std::pair<long, std::string> stateDigest() const;
    // The averaged updates served for replay (averaging/UpdateArchive.h): one chain of
    // consecutive epochs; an update that does not follow the last starts a new one.
    void addUpdate(std::shared_ptr<const AveragedUpdate> update);
    void clearUpdates();
    // Serves a round's own group average by group id to the other groups of its epoch
    // (averaging/GroupMerge.h; UpdateArchive::addGroupUpdate).
    void addGroupUpdate(const std::string &groupId, std::shared_ptr<const AveragedUpdate> update);
    // Answers `seal?` for `epoch` with these signed records (averaging/SealRelay.h): the seal this
    // peer merged and the records of its groups. The four newest epochs are kept.
    void addSealRelay(long epoch, const std::vector<std::string> &values);

    [[nodiscard]] BanList &bans();
    // Messages answered so far, by type (for tests and the status panel).
    [[nodiscard]] long long served(const std::string &type) const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace dedloc
