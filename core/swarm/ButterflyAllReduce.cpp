#include "swarm/ButterflyAllReduce.h"

#include "net/DataPlaneSecurity.h"
#include "net/WireMessage.h"
#include "swarm/LoadBalancing.h"
#include "util/Error.h"
#include "util/Log.h"

#include <nlohmann/json.hpp>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <array>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <thread>

namespace dedloc {

namespace {

using Clock = std::chrono::steady_clock;

// Messages (PARTs) a sender keeps queued per reducer before it waits for room (ZeroMQ's send
// high-water mark counts whole multipart messages): 8 x 512 KiB of fp32 at most, on top of what
// the kernel buffers. Parts encoded per pass of the poll loop before it looks at the sockets.
constexpr int SendQueue = 8;
constexpr int SendBudget = 32;
// Messages of rounds not started here yet: how many are kept, and for how long.
constexpr std::size_t PendingLimit = 4096;
constexpr auto PendingAge = std::chrono::seconds(120);

struct Piece {
    std::uint64_t offset = 0, count = 0;
};

// Splits [0, elements) into parts of at most `partElements`.
std::vector<Piece> pieces(std::uint64_t elements, std::size_t partElements)
{
    std::vector<Piece> out;
    for (std::uint64_t o = 0; o < elements; o += partElements)
        out.push_back({o, std::min<std::uint64_t>(partElements, elements - o)});
    return out;
}

zmq::message_t bytesMessage(const std::vector<std::uint8_t> &bytes) { return zmq::message_t(bytes.data(), bytes.size()); }

struct SenderState {
    double weight = 0.0;
    bool weightKnown = false;
    std::uint32_t partsReceived = 0;
    std::string routingId; // where to send the results back
};

// One part of this member's shard: each sender's decoded piece, until the part is reduced.
struct PartState {
    std::vector<std::vector<float>> values; // per member; empty = not delivered
    std::uint32_t delivered = 0;
    bool reduced = false;
};

} // namespace

struct AllReduceEndpoint::Impl {
    zmq::context_t context{1};
    std::shared_ptr<const DataPlaneSecurity> security;
    std::unique_ptr<ZapHandler> zap; // before the ROUTER binds; destroyed after it
    std::unique_ptr<zmq::socket_t> router;
    std::string endpoint;
    // Messages for a group whose round has not started here yet (a faster peer began earlier),
    // with the steady-clock time they arrived: at most PendingLimit, none older than PendingAge.
    struct Early {
        Clock::time_point arrived;
        std::vector<zmq::message_t> frames;
    };
    std::multimap<std::string, Early> pending;
};

AllReduceEndpoint::AllReduceEndpoint(bool reachable, const std::string &bindAddress,
                                     std::shared_ptr<const DataPlaneSecurity> security)
    : d(std::make_unique<Impl>())
{
    d->security = std::move(security);
    if (!reachable)
        return;
    if (d->security)
        d->zap = d->security->startZap(d->context);
    d->router = std::make_unique<zmq::socket_t>(d->context, zmq::socket_type::router);
    // Every option before bind (changing a ROUTER's options with live connections crashed
    // libzmq 4.3.4's I/O thread).
    d->router->set(zmq::sockopt::linger, 0);
    d->router->set(zmq::sockopt::rcvhwm, 0);
    d->router->set(zmq::sockopt::sndhwm, 0);
    if (d->security)
        d->security->configureServer(*d->router);
    try {
        d->router->bind(bindAddress);
    } catch (const zmq::error_t &e) {
        throw Error("cannot listen on " + bindAddress + ": " + e.what());
    }
    d->endpoint = d->router->get(zmq::sockopt::last_endpoint);
}

AllReduceEndpoint::~AllReduceEndpoint()
{
    d->pending.clear();
    d->router.reset(); // sockets before the ZAP handler and the context
    d->zap.reset();
}

std::string AllReduceEndpoint::endpoint() const { return d->endpoint; }

AllReduceReport AllReduceEndpoint::run(const std::string &groupId, const std::vector<GroupMember> &members,
                                       std::size_t me, std::span<float> values, const AllReduceOptions &options)
{
    const std::size_t n = members.size();
    if (n == 0 || me >= n)
        throw Error("all-reduce: member index " + std::to_string(me) + " outside a group of " + std::to_string(n));
    if (options.partElements == 0)
        throw Error("all-reduce: part size must be positive");
    std::vector<double> bandwidths;
    for (const auto &m : members)
        bandwidths.push_back(m.endpoint.empty() ? 0.0 : m.bandwidth);
    AllReduceReport report;
    report.shardSizes = balanceShards(static_cast<std::int64_t>(values.size()), bandwidths, options.minShardElements);
    std::vector<std::uint64_t> shardOffset(n, 0);
    for (std::size_t j = 1; j < n; ++j)
        shardOffset[j] = shardOffset[j - 1] + static_cast<std::uint64_t>(report.shardSizes[j - 1]);
    const auto myShard = static_cast<std::uint64_t>(report.shardSizes[me]);
    const bool iSend = members[me].weight > 0.0;
    const double myWeight = options.myWeight >= 0.0 ? options.myWeight : members[me].weight;
    if (myShard > 0 && !d->router)
        throw Error("all-reduce: this member has a shard but no ROUTER (client mode)");

    const auto start = Clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    const bool downloadCapped = options.download && options.download->rate() > 0.0;
    // Results arrive on this round's own DEALERs: bounded queues there let TCP flow control slow
    // the reducers to the cap. (The ROUTER's limit is left alone: changing it while connections
    // exist crashed libzmq 4.3.4's I/O thread.)
    const int receiveQueue = downloadCapped ? 8 : 0; // messages per connection; 0 = unbounded

    // --- My values for every other reducer's shard go out on a DEALER to it. Parts are encoded
    // and sent from the poll loop below, round-robin over the reducers (starting after me, so
    // that the members' first parts spread over all reducers), and only while a DEALER's queue
    // holds fewer than SendQueue messages: every reducer gets its first parts at once, sending
    // overlaps receiving and reducing, a slow link backs up into our loop instead of into an
    // unbounded queue, and a dead reducer costs no memory.
    std::vector<std::unique_ptr<zmq::socket_t>> dealers(n);
    std::vector<std::uint64_t> expectedBack(n, 0), receivedBack(n, 0);
    std::vector<std::vector<bool>> resultSeen(n);
    std::vector<std::vector<Piece>> outgoing(n);
    std::vector<std::uint32_t> nextPart(n, 0);
    std::uint64_t skippedBack = 0; // elements of shards whose reducer we would not connect to
    if (iSend) {
        for (std::size_t j = 0; j < n; ++j) {
            if (j == me || report.shardSizes[j] == 0)
                continue;
            auto s = std::make_unique<zmq::socket_t>(d->context, zmq::socket_type::dealer);
            s->set(zmq::sockopt::linger, 0);
            s->set(zmq::sockopt::sndhwm, SendQueue);
            s->set(zmq::sockopt::rcvhwm, receiveQueue);
            if (d->security) {
                // Closed run: never hand gradients to a member whose access token we have not
                // verified. Either way its shard keeps local values, without waiting for it.
                std::string refusal = d->security->admission(members[j].publicKey);
                if (refusal.empty()) {
                    try {
                        d->security->configureClient(*s, members[j].publicKey);
                    } catch (const Error &e) {
                        refusal = e.what();
                    }
                }
                if (!refusal.empty()) {
                    log::warning("allreduce", "group " + groupId + ": not sending to member " + std::to_string(j) + " ("
                                                  + members[j].peerId.substr(0, 8) + "): " + refusal);
                    skippedBack += static_cast<std::uint64_t>(report.shardSizes[j]);
                    continue;
                }
            }
            s->connect(members[j].endpoint);
            outgoing[j] = pieces(static_cast<std::uint64_t>(report.shardSizes[j]), options.partElements);
            expectedBack[j] = static_cast<std::uint64_t>(report.shardSizes[j]);
            resultSeen[j].assign(outgoing[j].size(), false);
            dealers[j] = std::move(s);
        }
    }
    double sentAt = -1.0;
    // Sends at most `budget` parts; returns true while some DEALER can take more right now.
    auto sendSome = [&](int budget) {
        bool progress = true;
        while (budget > 0 && progress) {
            progress = false;
            for (std::size_t k = 1; k < n && budget > 0; ++k) {
                const std::size_t j = (me + k) % n;
                if (!dealers[j] || nextPart[j] >= outgoing[j].size())
                    continue;
                auto &s = *dealers[j];
                if (!(s.get(zmq::sockopt::events) & ZMQ_POLLOUT))
                    continue;
                const auto p = nextPart[j];
                const auto &piece = outgoing[j][p];
                ShardHeader h{MessageType::Part, groupId, static_cast<std::uint32_t>(me), static_cast<std::uint32_t>(j),
                              p, static_cast<std::uint32_t>(outgoing[j].size()), piece.offset, piece.count,
                              myWeight, options.codec};
                // Encode straight into the message: one copy less per part.
                zmq::message_t payload(encodedBytes(options.codec, piece.count));
                encodeInto(options.codec, values.subspan(shardOffset[j] + piece.offset, piece.count),
                           {payload.data<std::uint8_t>(), payload.size()});
                if (options.upload)
                    options.upload->acquire(payload.size());
                std::array<zmq::message_t, 2> frames{bytesMessage(encodeShardHeader(h)), std::move(payload)};
                // POLLOUT was set, so the first frame is accepted, and ZeroMQ then takes the
                // whole multipart message.
                if (!zmq::send_multipart(s, frames, zmq::send_flags::dontwait))
                    continue;
                ++nextPart[j];
                --budget;
                progress = true;
            }
        }
        bool more = false, pending = false;
        for (std::size_t j = 0; j < n; ++j)
            if (dealers[j] && nextPart[j] < outgoing[j].size()) {
                pending = true;
                more = more || (dealers[j]->get(zmq::sockopt::events) & ZMQ_POLLOUT);
            }
        if (!pending && sentAt < 0)
            sentAt = elapsed();
        return more;
    };

    // --- Reduce my shard part by part, each as soon as every expected sender delivered it, and
    // stream each part's result back at once (reduction overlaps the transfer).
    const auto myParts = pieces(myShard, options.partElements);
    std::vector<PartState> partStates(myParts.size());
    for (auto &ps : partStates)
        ps.values.resize(n);
    std::vector<SenderState> senders(n);
    std::vector<bool> expectedSender(n, false);
    std::uint32_t expectedCount = 0;
    if (myShard > 0)
        for (std::size_t i = 0; i < n; ++i)
            if (i != me && members[i].weight > 0.0) {
                expectedSender[i] = true;
                ++expectedCount;
            }
    std::vector<CurveKey> memberCurveKeys(n);
    if (d->security)
        for (std::size_t i = 0; i < n; ++i) {
            try {
                memberCurveKeys[i] = curvePublicKeyOf(members[i].publicKey);
            } catch (const Error &) {
                // All zeros never matches a connection: that member's PARTs are refused.
            }
        }
    // Rejected messages whose sender the link proves (the class comment), by member.
    auto offence = [&](std::size_t member, const std::string &why) {
        for (auto &o : report.offences)
            if (o.member == member) {
                ++o.messages;
                return;
            }
        report.offences.push_back({member, 1, why});
    };
    // The member on whose CURVE connection `frame` arrived, if any.
    auto memberOfConnection = [&](const zmq::message_t &frame) -> std::optional<std::size_t> {
        if (!d->security)
            return std::nullopt;
        const auto key = DataPlaneSecurity::senderKey(frame);
        if (!key)
            return std::nullopt;
        for (std::size_t i = 0; i < n; ++i)
            if (i != me && memberCurveKeys[i] == *key)
                return i;
        return std::nullopt;
    };
    std::size_t partsReduced = 0;
    double reducedAt = 0.0;
    std::vector<float> average(std::min<std::uint64_t>(myShard, options.partElements));
    const ShardSchema partSchema{groupId, static_cast<std::uint32_t>(n), myShard, options.partElements, options.codec};

    auto reducePart = [&](std::size_t p) {
        auto &ps = partStates[p];
        const auto piece = myParts[p];
        std::vector<const float *> xs;
        std::vector<double> ws;
        for (std::size_t i = 0; i < n; ++i) { // member order: every reducer sums alike
            if (i == me && iSend) {
                xs.push_back(values.data() + shardOffset[me] + piece.offset);
                ws.push_back(myWeight);
            } else if (!ps.values[i].empty()) {
                xs.push_back(ps.values[i].data());
                ws.push_back(senders[i].weight);
            }
        }
        ps.reduced = true;
        ++partsReduced;
        if (xs.empty())
            return; // nobody to average: the part keeps its local values
        double total = 0.0;
        for (double w : ws)
            total += w;
        // Every sender with weight 0 (nobody accumulated anything): a plain mean, so that the
        // members still end equal and nobody waits for a result that never comes.
        const bool equalWeights = total <= 0.0;
        if (equalWeights) {
            std::fill(ws.begin(), ws.end(), 1.0);
            total = static_cast<double>(ws.size());
        }
        for (double &w : ws)
            w /= total;
        const std::size_t m = xs.size();
        for (std::uint64_t k = 0; k < piece.count; ++k) {
            double acc = 0.0;
            for (std::size_t j = 0; j < m; ++j)
                acc += ws[j] * static_cast<double>(xs[j][k]);
            average[k] = static_cast<float>(acc);
        }
        const double shardWeight = equalWeights ? 0.0 : total;
        report.myShardWeight = std::max(report.myShardWeight, shardWeight);
        report.groupWeight = std::max(report.groupWeight, shardWeight);
        zmq::message_t payload(encodedBytes(options.codec, piece.count));
        encodeInto(options.codec, std::span<const float>(average.data(), piece.count),
                   {payload.data<std::uint8_t>(), payload.size()});
        // Apply exactly what the others receive, so that every member ends bitwise equal.
        decode(options.codec, {payload.data<std::uint8_t>(), payload.size()},
               values.subspan(shardOffset[me] + piece.offset, piece.count));
        const ShardHeader h{MessageType::Result, groupId, static_cast<std::uint32_t>(me), static_cast<std::uint32_t>(me),
                            static_cast<std::uint32_t>(p), static_cast<std::uint32_t>(myParts.size()), piece.offset,
                            piece.count, shardWeight, options.codec};
        const auto header = encodeShardHeader(h);
        for (std::size_t i = 0; i < n; ++i) {
            if (i == me || senders[i].routingId.empty())
                continue;
            if (options.upload)
                options.upload->acquire(payload.size());
            zmq::message_t shared;
            shared.copy(payload); // reference-counted: no copy of the bytes
            std::array<zmq::message_t, 3> frames{zmq::message_t(senders[i].routingId.data(), senders[i].routingId.size()),
                                                 bytesMessage(header), std::move(shared)};
            zmq::send_multipart(*d->router, frames);
        }
        for (auto &v : ps.values)
            std::vector<float>().swap(v);
    };

    auto finishShard = [&](bool timedOut) {
        for (std::size_t p = 0; p < partStates.size(); ++p)
            if (!partStates[p].reduced)
                reducePart(p);
        for (std::size_t i = 0; i < n; ++i)
            if (expectedSender[i] && senders[i].partsReceived < myParts.size())
                report.excludedSenders.push_back(static_cast<std::uint32_t>(i));
        if (!report.excludedSenders.empty()) {
            report.complete = false;
            log::warning("allreduce", "group " + groupId + ": " + std::to_string(report.excludedSenders.size())
                                          + " sender(s) excluded from (part of) shard " + std::to_string(me)
                                          + (timedOut ? " (sender timeout)" : ""));
        }
        reducedAt = elapsed();
    };

    auto handlePart = [&](std::vector<zmq::message_t> &frames) {
        // frames: routing id, header, payload
        if (frames.size() != 3)
            throw ProtocolError("PART has " + std::to_string(frames.size()) + " frames, expected 3");
        const auto h = parseShardHeader({frames[1].data<std::uint8_t>(), frames[1].size()}, partSchema);
        if (h.type != MessageType::Part || h.shard != me)
            throw ProtocolError("not a PART for shard " + std::to_string(me));
        if (!expectedSender[h.sender])
            throw ProtocolError("member " + std::to_string(h.sender) + " is not a sender of this round");
        if (d->security) {
            // The header names the sender; the CURVE handshake proved who is on this connection.
            const auto key = DataPlaneSecurity::senderKey(frames[1]);
            if (!key || *key != memberCurveKeys[h.sender])
                throw ProtocolError("PART claims to come from member " + std::to_string(h.sender)
                                    + " but the connection is not that member's key");
        }
        if (h.parts != myParts.size() || h.offset != myParts[h.part].offset || h.count != myParts[h.part].count)
            throw ProtocolError("PART does not match the agreed shard layout");
        auto &s = senders[h.sender];
        if (!s.weightKnown) {
            s.weight = h.weight;
            s.weightKnown = true;
        } else if (h.weight != s.weight) {
            throw ProtocolError("PART changes the sender's weight");
        }
        auto &ps = partStates[h.part];
        if (ps.reduced) { // a slow sender, excluded at the sender timeout: not an offence
            log::debug("allreduce", "group " + groupId + ": late PART " + std::to_string(h.part) + " of member "
                                        + std::to_string(h.sender) + " (already reduced)");
            return;
        }
        auto &slot = ps.values[h.sender];
        if (!slot.empty())
            throw ProtocolError("duplicate PART " + std::to_string(h.part));
        std::vector<float> piece(h.count);
        decode(h.codec, {frames[2].data<std::uint8_t>(), frames[2].size()}, piece);
        for (float x : piece)
            if (!std::isfinite(x))
                throw ProtocolError("PART carries a non-finite value");
        slot = std::move(piece);
        s.routingId.assign(frames[0].data<char>(), frames[0].size());
        ++s.partsReceived;
        if (++ps.delivered == expectedCount)
            reducePart(h.part);
    };

    auto allPartsReduced = [&] { return partsReduced == partStates.size(); };
    if (myShard > 0 && expectedCount == 0) // nobody sends to me: my shard is mine alone
        finishShard(false);

    auto dispatchRouterMessage = [&](std::vector<zmq::message_t> &frames) {
        if (frames.size() < 2)
            return;
        // Route by group: another round's message waits for that round (bounded).
        std::string group;
        try {
            const auto j = nlohmann::json::from_cbor(frames[1].data<std::uint8_t>(),
                                                     frames[1].data<std::uint8_t>() + frames[1].size());
            group = j.at("g").get<std::string>();
        } catch (const std::exception &) {
            log::warning("allreduce", "dropped a malformed message (header is not a CBOR map with a group)");
            if (const auto who = memberOfConnection(frames[1]))
                offence(*who, "header is not a CBOR map with a group");
            return;
        }
        if (group != groupId) {
            if (d->pending.size() < PendingLimit && group.size() <= 64)
                d->pending.emplace(group, Impl::Early{Clock::now(), std::move(frames)});
            return;
        }
        if (myShard == 0) {
            log::warning("allreduce", "dropped a PART for a member without a shard");
            return;
        }
        try {
            handlePart(frames);
        } catch (const std::exception &e) {
            log::warning("allreduce", std::string("dropped a message: ") + e.what());
            if (const auto who = memberOfConnection(frames[1]))
                offence(*who, e.what());
        }
    };

    // Parts that arrived before this round started.
    if (d->router) {
        // A round that never started here (this peer left that group, or a sender raced ahead
        // of a group that never formed) leaves its messages behind: they age out.
        std::erase_if(d->pending, [&](const auto &e) { return start - e.second.arrived > PendingAge; });
        auto range = d->pending.equal_range(groupId);
        std::vector<std::vector<zmq::message_t>> early;
        for (auto it = range.first; it != range.second; ++it)
            early.push_back(std::move(it->second.frames));
        d->pending.erase(range.first, range.second);
        for (auto &frames : early)
            dispatchRouterMessage(frames);
    }

    std::vector<float> resultPiece(options.partElements);
    auto handleResult = [&](std::size_t j, std::vector<zmq::message_t> &frames) {
        if (frames.size() != 2)
            throw ProtocolError("RESULT has " + std::to_string(frames.size()) + " frames");
        const auto shard = static_cast<std::uint64_t>(report.shardSizes[j]);
        const auto h = parseShardHeader({frames[0].data<std::uint8_t>(), frames[0].size()},
                                        ShardSchema{groupId, static_cast<std::uint32_t>(n), shard, options.partElements,
                                                    options.codec});
        if (h.type != MessageType::Result || h.shard != j)
            throw ProtocolError("not a RESULT for shard " + std::to_string(j));
        if (h.part >= resultSeen[j].size() || resultSeen[j][h.part])
            throw ProtocolError("duplicate or unexpected RESULT part " + std::to_string(h.part));
        const std::span<float> piece(resultPiece.data(), h.count);
        decode(h.codec, {frames[1].data<std::uint8_t>(), frames[1].size()}, piece);
        for (float x : piece)
            if (!std::isfinite(x))
                throw ProtocolError("RESULT carries a non-finite value");
        std::copy(piece.begin(), piece.end(), values.begin() + static_cast<std::ptrdiff_t>(shardOffset[j] + h.offset));
        resultSeen[j][h.part] = true;
        receivedBack[j] += h.count;
        report.groupWeight = std::max(report.groupWeight, h.weight);
    };

    auto resultsDone = [&] {
        for (std::size_t j = 0; j < n; ++j)
            if (receivedBack[j] < expectedBack[j])
                return false;
        return true;
    };

    std::vector<zmq::pollitem_t> items;
    std::vector<std::size_t> owner; // n = router, else dealer index
    if (d->router) {
        items.push_back({d->router->handle(), 0, ZMQ_POLLIN, 0});
        owner.push_back(n);
    }
    for (std::size_t j = 0; j < n; ++j)
        if (dealers[j]) {
            items.push_back({dealers[j]->handle(), 0, ZMQ_POLLIN, 0});
            owner.push_back(j);
        }
    bool shardDone = allPartsReduced();
    while (true) {
        if (!shardDone && (allPartsReduced() || elapsed() >= options.senderTimeout)) {
            finishShard(!allPartsReduced());
            shardDone = true;
        }
        if (shardDone && (resultsDone() || elapsed() >= options.reducerTimeout))
            break;
        const bool canSendMore = sendSome(SendBudget);
        if (items.empty()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            continue;
        }
        // Wake up for incoming messages, and for room on a DEALER that still has parts to send.
        for (std::size_t k = 0; k < items.size(); ++k)
            if (owner[k] != n)
                items[k].events = ZMQ_POLLIN
                                  | (nextPart[owner[k]] < outgoing[owner[k]].size() ? ZMQ_POLLOUT : 0);
        zmq::poll(items.data(), items.size(), std::chrono::milliseconds(canSendMore ? 0 : 20));
        for (std::size_t k = 0; k < items.size(); ++k) {
            if (!(items[k].revents & ZMQ_POLLIN)) // (POLLOUT: sendSome at the top of the loop)
                continue;
            auto &socket = owner[k] == n ? *d->router : *dealers[owner[k]];
            for (int drained = 0; drained < 256; ++drained) { // drain, but let the others in too
                std::vector<zmq::message_t> frames;
                if (!zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait))
                    break;
                if (downloadCapped) {
                    std::size_t bytes = 0;
                    for (const auto &f : frames)
                        bytes += f.size();
                    options.download->acquire(bytes);
                }
                if (owner[k] == n) {
                    dispatchRouterMessage(frames);
                } else {
                    try {
                        handleResult(owner[k], frames);
                    } catch (const std::exception &e) {
                        log::warning("allreduce", std::string("dropped a result: ") + e.what());
                        offence(owner[k], e.what()); // it came on our connection to that reducer
                    }
                }
            }
        }
    }
    log::debug("allreduce", "group " + groupId + ": parts sent " + std::to_string(sentAt) + " s, shard reduced "
                                + std::to_string(reducedAt) + " s, results in " + std::to_string(elapsed()) + " s");

    std::uint64_t expected = skippedBack, received = 0;
    for (std::size_t j = 0; j < n; ++j) {
        expected += expectedBack[j];
        received += std::min(receivedBack[j], expectedBack[j]);
    }
    report.receivedFraction = expected ? static_cast<double>(received) / static_cast<double>(expected) : 1.0;
    if (received < expected) {
        report.complete = false;
        log::warning("allreduce", "group " + groupId + ": received " + std::to_string(received) + " of "
                                      + std::to_string(expected) + " averaged elements; the rest keep local values");
    }
    for (auto &s : dealers)
        if (s)
            s->close();
    return report;
}

} // namespace dedloc
