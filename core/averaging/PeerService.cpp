#include "averaging/PeerService.h"

#include "net/DataPlaneSecurity.h"
#include "averaging/GroupShares.h"
#include "averaging/Reachability.h"
#include "averaging/SealRelay.h"
#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"
#include "util/Clock.h"

#include <nlohmann/json.hpp>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <thread>

namespace dedloc {

namespace {


zmq::message_t bytesMessage(const std::vector<std::uint8_t> &bytes) { return zmq::message_t(bytes.data(), bytes.size()); }

struct Follower {
    JoinRequest request;
    std::string routingId;
};

} // namespace

struct PeerService::Impl {
    std::string runId;
    std::uint64_t partElements;
    zmq::context_t context{1};
    std::shared_ptr<const DataPlaneSecurity> security;
    std::unique_ptr<ZapHandler> zap; // before the ROUTER binds; destroyed after it
    zmq::socket_t router{context, zmq::socket_type::router};
    std::string endpoint;
    std::shared_ptr<BanList> banList; // shared with the peer's matchmaking and rounds

    mutable std::mutex mutex;
    bool gathering = false;
    GatherSpec gather;
    std::vector<Follower> followers;
    std::deque<std::vector<zmq::message_t>> outbox;
    // Newest last: the two newest, and older ones a download still reads (pinned).
    std::deque<std::shared_ptr<const StateSnapshot>> snapshots;
    std::map<std::string, double> pinnedUntil; // snapshot id -> Unix seconds
    double pinSeconds = 30.0;
    std::function<void(std::span<float>)> partTamper; // tests only
    std::map<std::string, long long> served;
    std::uint64_t snapshotCounter = 0;
    std::map<std::shared_ptr<const StateSnapshot>, std::string> snapshotIds;
    std::map<std::shared_ptr<const StateSnapshot>, std::string> digests;
    UpdateArchive updates;
    std::map<long, std::vector<std::uint8_t>> sealRelays; // epoch -> relay frame, the newest few

    std::atomic<bool> stop{false};
    std::thread thread;
    // Dial-backs in progress (reach? requests), at most MaxDialBacks; owned by the loop thread.
    static constexpr std::size_t MaxDialBacks = 4;
    static constexpr std::size_t KeptSnapshots = 2;      // the newest, always served
    static constexpr std::size_t MaxPinnedSnapshots = 2; // older ones downloads still read
    std::list<std::future<void>> dialBacks;

    void reply(const std::string &routingId, const std::string &type, const nlohmann::json &fields,
               zmq::message_t *data = nullptr)
    {
        std::vector<zmq::message_t> frames;
        frames.emplace_back(routingId.data(), routingId.size());
        frames.push_back(bytesMessage(encodeServiceMessage(type, fields)));
        if (data)
            frames.push_back(std::move(*data));
        zmq::send_multipart(router, frames, zmq::send_flags::dontwait);
    }

    void handle(std::vector<zmq::message_t> &frames)
    {
        const std::string routingId(frames[0].data<char>(), frames[0].size());
        const std::string connection = "connection " + toHex(reinterpret_cast<const unsigned char *>(routingId.data()), routingId.size());
        const double now = unixNow();
        if (banList->isBanned(connection, now))
            return;
        nlohmann::json m;
        try {
            if (frames.size() != 2)
                throw ProtocolError("service request has " + std::to_string(frames.size() - 1) + " frames, expected 1");
            m = parseServiceMessage({frames[1].data<std::uint8_t>(), frames[1].size()});
        } catch (const std::exception &e) {
            banList->strike(connection, e.what(), now);
            return;
        }
        const auto type = m.at("t").get<std::string>();
        std::lock_guard lock(mutex);
        ++served[type];
        try {
            if (type == "join") {
                const auto r = joinFromJson(m);
                if (banList->isBanned(r.peerId, now))
                    return reply(routingId, "refuse", {{"why", "banned"}});
                if (security) {
                    const auto key = DataPlaneSecurity::senderKey(frames[1]);
                    if (!key || *key != curvePublicKeyOf(r.publicKey)) {
                        banList->strike(connection, "join with a key that is not its connection's", now);
                        return reply(routingId, "refuse", {{"why", "your key is not the key of your connection"}});
                    }
                }
                if (r.runId != runId) {
                    banList->strike(r.peerId, "join for unknown run \"" + r.runId + "\"", now);
                    return reply(routingId, "refuse", {{"why", "unknown run"}});
                }
                if (!gathering || now > gather.deadline)
                    return reply(routingId, "refuse", {{"why", "not leading a group"}});
                if (r.epoch != gather.epoch || r.schema != gather.schema)
                    return reply(routingId, "refuse", {{"why", "another epoch or tensor schema"}});
                for (auto &f : followers)
                    if (f.request.peerId == r.peerId) {
                        f.routingId = routingId; // a retry on a new connection, with what it says now
                        f.request = r;
                        return reply(routingId, "accept", {{"d", gather.deadline}, {"n", unixNow()}});
                    }
                if (followers.size() >= gather.capacity)
                    return reply(routingId, "refuse", {{"why", "group is full"}});
                followers.push_back({r, routingId});
                return reply(routingId, "accept", {{"d", gather.deadline}, {"n", unixNow()}});
            }
            if (type == "state?") {
                if (m.value("run", std::string()) != runId)
                    return reply(routingId, "refuse", {{"why", "unknown run"}});
                if (snapshots.empty())
                    return reply(routingId, "refuse", {{"why", "no state yet"}});
                const auto &s = snapshots.back();
                pinnedUntil[snapshotIds[s]] = now + pinSeconds;
                StateInfo info{snapshotIds[s], s->epoch, s->values.size(),
                               static_cast<std::uint32_t>((s->values.size() + partElements - 1) / partElements),
                               partElements, digestOf(s)};
                return reply(routingId, "state", stateInfoToJson(info));
            }
            if (type == "part?") {
                const auto id = m.at("i").get<std::string>();
                if (!m.at("k").is_number_unsigned())
                    throw ProtocolError("state part index is not a non-negative integer");
                const auto part = m.at("k").get<std::uint64_t>();
                for (const auto &s : snapshots) {
                    if (snapshotIds[s] != id)
                        continue;
                    // Compared as a part count first: part * partElements must not wrap.
                    if (part >= (s->values.size() + partElements - 1) / partElements)
                        throw ProtocolError("state part " + std::to_string(part) + " does not exist");
                    pinnedUntil[id] = now + pinSeconds;
                    const std::uint64_t offset = part * partElements;
                    const auto count = std::min<std::uint64_t>(partElements, s->values.size() - offset);
                    zmq::message_t data(s->values.data() + offset, count * sizeof(float));
                    if (partTamper)
                        partTamper({data.data<float>(), count});
                    return reply(routingId, "part", {{"i", id}, {"k", part}}, &data);
                }
                return reply(routingId, "refuse", {{"why", "snapshot is gone"}});
            }
            if (type == "update?" || type == "upart?") {
                if (type == "update?" && m.value("run", std::string()) != runId)
                    return reply(routingId, "refuse", {{"why", "unknown run"}});
                const auto a = updates.answer(type, m);
                zmq::message_t data(a.data.data(), a.data.size());
                return reply(routingId, a.type, a.fields, a.type == "upart" ? &data : nullptr);
            }
            if (type == "seal?") {
                const long epoch = integerOr(m, "e", -1);
                const auto relay = sealRelays.find(epoch);
                if (m.value("run", std::string()) != runId || relay == sealRelays.end())
                    return reply(routingId, "refuse", {{"why", "no seal taken at that epoch"}});
                zmq::message_t data(relay->second.data(), relay->second.size());
                return reply(routingId, "seal", {{"e", epoch}}, &data);
            }
            if (type == "ping")
                return reply(routingId, "pong", nlohmann::json::object());
            if (type == "reach?")
                return startDialBack(routingId, reachRequestFromJson(m), frames[1], connection, now);
            throw ProtocolError("\"" + type + "\" is not a request");
        } catch (const std::exception &e) {
            banList->strike(connection, e.what(), now);
            reply(routingId, "refuse", {{"why", std::string("bad request: ") + e.what()}});
        }
    }

    // The snapshot's SHA-256 (StateInfo::digest), computed on its first state? (about 40 ms for
    // 15 MB) and kept with it. Under `mutex`.
    std::string digestOf(const std::shared_ptr<const StateSnapshot> &s)
    {
        auto &d = digests[s];
        if (d.empty())
            d = sha256Hex(s->values.data(), s->values.size() * sizeof(float));
        return d;
    }

    // Keeps the KeptSnapshots newest snapshots and, of the older ones, the MaxPinnedSnapshots
    // newest that a download asked for within the pin time. Under `mutex`.
    void dropUnpinnedSnapshots(double now)
    {
        std::size_t pinnedKept = 0;
        for (std::size_t k = snapshots.size(); k-- > 0;) {
            const std::size_t age = snapshots.size() - 1 - k; // 0: the newest
            const auto &id = snapshotIds[snapshots[k]];
            const auto pin = pinnedUntil.find(id);
            const bool pinned = pin != pinnedUntil.end() && pin->second > now;
            if (age < KeptSnapshots || (pinned && pinnedKept++ < MaxPinnedSnapshots))
                continue;
            pinnedUntil.erase(id);
            snapshotIds.erase(snapshots[k]);
            digests.erase(snapshots[k]);
            snapshots.erase(snapshots.begin() + static_cast<std::ptrdiff_t>(k));
        }
    }

    // Connects back to the requester's endpoint on another thread (averaging/Reachability.h);
    // the answer goes out through the outbox. Under `mutex`.
    void startDialBack(const std::string &routingId, const ReachRequest &r, zmq::message_t &request,
                       const std::string &connection, double now)
    {
        if (security) {
            const auto key = DataPlaneSecurity::senderKey(request);
            if (!key || *key != curvePublicKeyOf(r.publicKey)) {
                banList->strike(connection, "reach? with a key that is not its connection's", now);
                return reply(routingId, "refuse", {{"why", "your key is not the key of your connection"}});
            }
        }
        std::string observed;
        try {
            observed = request.gets("Peer-Address");
        } catch (const zmq::error_t &) {
        }
        // Only ever the requester's own address: its advertised port at the address its request
        // came from (behind NAT: its router's, where only a port forward leads to it).
        const std::string target = dialBackTarget(r.serviceEndpoint, observed);
        if (target.empty())
            return reply(routingId, "reach", {{"ok", false}, {"sure", false},
                                              {"why", "no TCP port to check, or no address the request came from"}});
        dialBacks.remove_if([](const std::future<void> &f) {
            return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
        });
        if (dialBacks.size() >= MaxDialBacks)
            return reply(routingId, "refuse", {{"why", "busy: try another peer"}});
        dialBacks.push_back(std::async(std::launch::async, [this, routingId, r, target] {
            std::string why;
            const bool ok = dialBack(target, r.publicKey, security, DialBackTimeout, &why);
            std::vector<zmq::message_t> frames;
            frames.emplace_back(routingId.data(), routingId.size());
            frames.push_back(bytesMessage(
                encodeServiceMessage("reach", {{"ok", ok}, {"sure", true}, {"at", target}, {"why", why}})));
            std::lock_guard lock(mutex);
            outbox.push_back(std::move(frames));
        }));
    }

    void loop()
    {
        while (!stop.load()) {
            {
                std::deque<std::vector<zmq::message_t>> pending;
                {
                    std::lock_guard lock(mutex);
                    pending.swap(outbox);
                }
                for (auto &frames : pending)
                    zmq::send_multipart(router, frames, zmq::send_flags::dontwait);
            }
            zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
            zmq::poll(&item, 1, std::chrono::milliseconds(20));
            for (int i = 0; i < 64 && (item.revents & ZMQ_POLLIN); ++i) {
                std::vector<zmq::message_t> frames;
                if (!zmq::recv_multipart(router, std::back_inserter(frames), zmq::recv_flags::dontwait))
                    break;
                if (frames.size() >= 1)
                    handle(frames);
            }
        }
    }

    // `fields` to every follower, or where `listed` is given and says no for one, `otherwise`.
    void sendToFollowers(const std::string &type, const nlohmann::json &fields,
                         const std::function<bool(const JoinRequest &)> &listed = {},
                         const nlohmann::json &otherwise = {})
    {
        const auto header = encodeServiceMessage(type, fields);
        const auto disband = listed ? encodeServiceMessage("disband", otherwise) : std::vector<std::uint8_t>();
        for (const auto &f : followers) {
            std::vector<zmq::message_t> frames;
            frames.emplace_back(f.routingId.data(), f.routingId.size());
            frames.push_back(bytesMessage(!listed || listed(f.request) ? header : disband));
            outbox.push_back(std::move(frames));
        }
        followers.clear();
        gathering = false;
    }
};

PeerService::PeerService(std::string runId, const std::string &bindAddress, std::uint64_t partElements,
                         std::shared_ptr<const DataPlaneSecurity> security, std::shared_ptr<BanList> bans)
    : d(std::make_unique<Impl>())
{
    d->banList = bans ? std::move(bans) : std::make_shared<BanList>();
    d->runId = std::move(runId);
    d->partElements = partElements;
    d->security = std::move(security);
    if (d->security)
        d->zap = d->security->startZap(d->context);
    // Every option before bind (libzmq 4.3.4 crashed on a ROUTER changed with live connections).
    d->router.set(zmq::sockopt::linger, 0);
    d->router.set(zmq::sockopt::router_mandatory, 0);
    // Requests are one header frame of at most MaxServiceHeaderBytes: a frame four times that is
    // not stored at all (the sender is disconnected); one just above it is read, refused, struck.
    d->router.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(4 * MaxServiceHeaderBytes));
    // A reader that asks and never reads: at most ServiceSendQueue replies wait here for it (a
    // part is up to 512 KiB; ZeroMQ's default queue of 1 000 would hold 500 MiB for 30 bytes of
    // requests); the next ones are dropped. An honest client has one request in flight.
    d->router.set(zmq::sockopt::sndhwm, ServiceSendQueue);
    if (d->security)
        d->security->configureServer(d->router);
    try {
        d->router.bind(bindAddress);
    } catch (const zmq::error_t &e) {
        throw Error("cannot listen on " + bindAddress + " (service socket): " + e.what());
    }
    d->endpoint = d->router.get(zmq::sockopt::last_endpoint);
    d->thread = std::thread([this] { d->loop(); });
}

PeerService::~PeerService()
{
    d->stop = true;
    if (d->thread.joinable())
        d->thread.join();
    d->dialBacks.clear(); // waits for each (at most DialBackTimeout)
    d->router.close();
    d->zap.reset(); // after the socket, before the context
}

std::string PeerService::endpoint() const { return d->endpoint; }

void PeerService::advertise(std::string endpoint) { d->endpoint = std::move(endpoint); }

void PeerService::openGather(const GatherSpec &spec)
{
    std::lock_guard lock(d->mutex);
    d->gathering = true;
    d->gather = spec;
    d->followers.clear();
}

bool PeerService::closeGatherIfEmpty()
{
    std::lock_guard lock(d->mutex);
    if (!d->followers.empty())
        return false;
    d->gathering = false;
    return true;
}

std::vector<JoinRequest> PeerService::followers() const
{
    std::lock_guard lock(d->mutex);
    std::vector<JoinRequest> out;
    for (const auto &f : d->followers)
        out.push_back(f.request);
    return out;
}

void PeerService::begin(const GroupInfo &group)
{
    // As the follower checks its BEGIN (Matchmaker::follow): listed with what it joined with.
    const auto listed = [&](const JoinRequest &r) {
        return std::any_of(group.members.begin(), group.members.end(), [&](const GroupMember &m) {
            return m.peerId == r.peerId && joinedOtherwise(m, r).empty();
        });
    };
    std::lock_guard lock(d->mutex);
    d->sendToFollowers("begin", groupToJson(group), listed,
                       {{"why", "the group began without this peer: it joined as the group began"}});
}

void PeerService::disband(const std::string &why, const Declaration *askInstead)
{
    nlohmann::json fields{{"why", why}};
    if (askInstead)
        fields["l"] = suggestedLeaderToJson(*askInstead);
    std::lock_guard lock(d->mutex);
    d->sendToFollowers("disband", fields);
}

void PeerService::setState(std::shared_ptr<const StateSnapshot> snapshot)
{
    std::lock_guard lock(d->mutex);
    d->snapshotIds[snapshot] = std::to_string(snapshot->epoch) + "-" + std::to_string(++d->snapshotCounter);
    d->snapshots.push_back(std::move(snapshot));
    d->dropUnpinnedSnapshots(unixNow());
}

void PeerService::setSnapshotPin(double seconds)
{
    std::lock_guard lock(d->mutex);
    d->pinSeconds = seconds;
}

void PeerService::setPartTamper(std::function<void(std::span<float>)> tamper)
{
    std::lock_guard lock(d->mutex);
    d->partTamper = std::move(tamper);
}

std::pair<long, std::string> PeerService::stateDigest() const
{
    std::shared_ptr<const StateSnapshot> newest;
    {
        std::lock_guard lock(d->mutex);
        if (d->snapshots.empty())
            return {-1, {}};
        newest = d->snapshots.back();
        if (const auto it = d->digests.find(newest); it != d->digests.end() && !it->second.empty())
            return {newest->epoch, it->second};
    }
    auto digest = sha256Hex(newest->values.data(), newest->values.size() * sizeof(float));
    std::lock_guard lock(d->mutex);
    if (d->snapshotIds.count(newest)) // still kept: cache it for the answers to state?
        d->digests[newest] = digest;
    return {newest->epoch, digest};
}

long PeerService::stateEpoch() const
{
    std::lock_guard lock(d->mutex);
    return d->snapshots.empty() ? -1 : d->snapshots.back()->epoch;
}

void PeerService::addUpdate(std::shared_ptr<const AveragedUpdate> update)
{
    std::lock_guard lock(d->mutex);
    d->updates.add(std::move(update));
}

void PeerService::addSealRelay(long epoch, const std::vector<std::string> &values)
{
    auto frame = encodeRelayedRecords(values);
    std::lock_guard lock(d->mutex);
    d->sealRelays[epoch] = std::move(frame);
    while (d->sealRelays.size() > 4)
        d->sealRelays.erase(d->sealRelays.begin());
}

void PeerService::addGroupUpdate(const std::string &groupId, std::shared_ptr<const AveragedUpdate> update)
{
    std::lock_guard lock(d->mutex);
    d->updates.addGroupUpdate(groupId, std::move(update));
}

void PeerService::clearUpdates()
{
    std::lock_guard lock(d->mutex);
    d->updates.clear();
}

BanList &PeerService::bans() { return *d->banList; }

long long PeerService::served(const std::string &type) const
{
    std::lock_guard lock(d->mutex);
    auto it = d->served.find(type);
    return it == d->served.end() ? 0 : it->second;
}

} // namespace dedloc
