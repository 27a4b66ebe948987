#include "swarm/ButterflyAllReduce.h"

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

namespace dedloc {

namespace {

using Clock = std::chrono::steady_clock;

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
    std::vector<float> values; // this sender's piece of my shard, decoded
    std::uint32_t partsReceived = 0;
    std::uint32_t parts = 0;
    std::vector<bool> seen;
    double weight = 0.0;
    std::string routingId; // where to send the result back
};

} // namespace

struct AllReduceEndpoint::Impl {
    zmq::context_t context{1};
    std::unique_ptr<zmq::socket_t> router;
    std::string endpoint;
    // Messages for a group whose round has not started here yet (a faster peer began earlier).
    std::multimap<std::string, std::vector<zmq::message_t>> pending;
};

AllReduceEndpoint::AllReduceEndpoint(bool reachable, const std::string &bindAddress) : d(std::make_unique<Impl>())
{
    if (!reachable)
        return;
    d->router = std::make_unique<zmq::socket_t>(d->context, zmq::socket_type::router);
    d->router->set(zmq::sockopt::linger, 0);
    d->router->set(zmq::sockopt::rcvhwm, 0);
    d->router->set(zmq::sockopt::sndhwm, 0);
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
    d->router.reset(); // sockets before the context
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

    // --- Send my values for every other reducer's shard (on a DEALER to it).
    std::vector<std::unique_ptr<zmq::socket_t>> dealers(n);
    std::vector<std::uint64_t> expectedBack(n, 0), receivedBack(n, 0);
    if (iSend) {
        for (std::size_t j = 0; j < n; ++j) {
            if (j == me || report.shardSizes[j] == 0)
                continue;
            auto s = std::make_unique<zmq::socket_t>(d->context, zmq::socket_type::dealer);
            s->set(zmq::sockopt::linger, 0);
            s->set(zmq::sockopt::sndhwm, 0);
            s->set(zmq::sockopt::rcvhwm, 0);
            s->connect(members[j].endpoint);
            const auto parts = pieces(static_cast<std::uint64_t>(report.shardSizes[j]), options.partElements);
            for (std::uint32_t p = 0; p < parts.size(); ++p) {
                ShardHeader h{MessageType::Part, groupId, static_cast<std::uint32_t>(me), static_cast<std::uint32_t>(j),
                              p, static_cast<std::uint32_t>(parts.size()), parts[p].offset, parts[p].count,
                              myWeight, options.codec};
                // Encode straight into the message: one copy less per part.
                zmq::message_t payload(encodedBytes(options.codec, parts[p].count));
                encodeInto(options.codec, values.subspan(shardOffset[j] + parts[p].offset, parts[p].count),
                           {payload.data<std::uint8_t>(), payload.size()});
                std::array<zmq::message_t, 2> frames{bytesMessage(encodeShardHeader(h)), std::move(payload)};
                zmq::send_multipart(*s, frames);
            }
            expectedBack[j] = static_cast<std::uint64_t>(report.shardSizes[j]);
            dealers[j] = std::move(s);
        }
    }

    // --- Reduce my shard.
    std::vector<SenderState> senders(n);
    std::vector<bool> expectedSender(n, false);
    bool reduced = myShard == 0;
    const ShardSchema partSchema{groupId, static_cast<std::uint32_t>(n), myShard, options.partElements, options.codec};

    auto finishReduction = [&](bool timedOut) {
        std::vector<double> sum(myShard, 0.0);
        double total = 0.0;
        std::vector<std::size_t> arrived;
        for (std::size_t i = 0; i < n; ++i) {
            const bool mine = i == me && iSend;
            const bool complete = senders[i].parts > 0 && senders[i].partsReceived == senders[i].parts;
            if (!mine && !complete) {
                if (expectedSender[i])
                    report.excludedSenders.push_back(static_cast<std::uint32_t>(i));
                continue;
            }
            arrived.push_back(i);
            total += mine ? myWeight : senders[i].weight;
        }
        // Every sender with weight 0 (nobody accumulated anything): a plain mean, so that the
        // members still end equal and nobody waits for a result that never comes.
        const bool equalWeights = total <= 0.0;
        total = 0.0;
        for (std::size_t i : arrived) {
            const bool mine = i == me && iSend;
            const double w = equalWeights ? 1.0 : (mine ? myWeight : senders[i].weight);
            const float *x = mine ? values.data() + shardOffset[me] : senders[i].values.data();
            for (std::uint64_t k = 0; k < myShard; ++k)
                sum[k] += w * static_cast<double>(x[k]);
            total += w;
        }
        report.myShardWeight = equalWeights ? 0.0 : total;
        report.groupWeight = std::max(report.groupWeight, report.myShardWeight);
        if (!report.excludedSenders.empty()) {
            report.complete = false;
            log::warning("allreduce", "group " + groupId + ": " + std::to_string(report.excludedSenders.size())
                                          + " sender(s) excluded from shard " + std::to_string(me)
                                          + (timedOut ? " (sender timeout)" : ""));
        }
        if (arrived.empty())
            return; // nobody to average: the shard keeps its local values
        std::vector<float> average(myShard);
        for (std::uint64_t k = 0; k < myShard; ++k)
            average[k] = static_cast<float>(sum[k] / total);
        const auto parts = pieces(myShard, options.partElements);
        for (std::uint32_t p = 0; p < parts.size(); ++p) {
            auto slice = std::span<const float>(average).subspan(parts[p].offset, parts[p].count);
            const auto payload = encode(options.codec, slice);
            // Apply exactly what the others receive, so that every member ends bitwise equal.
            decode(options.codec, payload, values.subspan(shardOffset[me] + parts[p].offset, parts[p].count));
            ShardHeader h{MessageType::Result, groupId, static_cast<std::uint32_t>(me), static_cast<std::uint32_t>(me),
                          p, static_cast<std::uint32_t>(parts.size()), parts[p].offset, parts[p].count,
                          report.myShardWeight, options.codec};
            const auto header = encodeShardHeader(h);
            for (std::size_t i = 0; i < n; ++i) {
                if (i == me || senders[i].routingId.empty())
                    continue;
                std::array<zmq::message_t, 3> frames{zmq::message_t(senders[i].routingId.data(), senders[i].routingId.size()),
                                                     bytesMessage(header), bytesMessage(payload)};
                zmq::send_multipart(*d->router, frames);
            }
        }
    };

    if (myShard > 0) {
        for (std::size_t i = 0; i < n; ++i) {
            if (i == me || members[i].weight <= 0.0)
                continue;
            expectedSender[i] = true;
            senders[i].values.assign(myShard, 0.0F);
        }
    }

    auto handlePart = [&](std::vector<zmq::message_t> &frames) {
        // frames: routing id, header, payload
        if (frames.size() != 3)
            throw ProtocolError("PART has " + std::to_string(frames.size()) + " frames, expected 3");
        const auto h = parseShardHeader({frames[1].data<std::uint8_t>(), frames[1].size()}, partSchema);
        if (h.type != MessageType::Part || h.shard != me)
            throw ProtocolError("not a PART for shard " + std::to_string(me));
        auto &s = senders[h.sender];
        if (!expectedSender[h.sender])
            throw ProtocolError("member " + std::to_string(h.sender) + " is not a sender of this round");
        const auto expectedParts = pieces(myShard, options.partElements);
        if (h.parts != expectedParts.size() || h.offset != expectedParts[h.part].offset
            || h.count != expectedParts[h.part].count)
            throw ProtocolError("PART does not match the agreed shard layout");
        if (s.parts == 0) {
            s.parts = h.parts;
            s.seen.assign(h.parts, false);
            s.weight = h.weight;
        } else if (h.weight != s.weight) {
            throw ProtocolError("PART changes the sender's weight");
        }
        if (s.seen[h.part])
            throw ProtocolError("duplicate PART " + std::to_string(h.part));
        s.routingId.assign(frames[0].data<char>(), frames[0].size());
        decode(h.codec, {frames[2].data<std::uint8_t>(), frames[2].size()},
               std::span<float>(s.values).subspan(h.offset, h.count));
        for (std::uint64_t k = h.offset; k < h.offset + h.count; ++k)
            if (!std::isfinite(s.values[k]))
                throw ProtocolError("PART carries a non-finite value");
        s.seen[h.part] = true;
        ++s.partsReceived;
    };

    auto allSendersIn = [&] {
        for (std::size_t i = 0; i < n; ++i)
            if (expectedSender[i] && (senders[i].parts == 0 || senders[i].partsReceived < senders[i].parts))
                return false;
        return true;
    };

    // Parts that arrived before this round started.
    if (d->router) {
        auto range = d->pending.equal_range(groupId);
        std::vector<std::vector<zmq::message_t>> early;
        for (auto it = range.first; it != range.second; ++it)
            early.push_back(std::move(it->second));
        d->pending.erase(range.first, range.second);
        for (auto &frames : early) {
            if (myShard == 0)
                break;
            try {
                handlePart(frames);
            } catch (const std::exception &e) {
                log::warning("allreduce", std::string("dropped a message: ") + e.what());
            }
        }
    }

    auto resultsDone = [&] {
        for (std::size_t j = 0; j < n; ++j)
            if (receivedBack[j] < expectedBack[j])
                return false;
        return true;
    };

    while (true) {
        if (!reduced && (allSendersIn() || elapsed() >= options.senderTimeout)) {
            finishReduction(!allSendersIn());
            reduced = true;
        }
        if (reduced && (resultsDone() || elapsed() >= options.reducerTimeout))
            break;
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
        zmq::poll(items.data(), items.size(), std::chrono::milliseconds(20));
        for (std::size_t k = 0; k < items.size(); ++k) {
            if (!(items[k].revents & ZMQ_POLLIN))
                continue;
            std::vector<zmq::message_t> frames;
            if (owner[k] == n) {
                if (!zmq::recv_multipart(*d->router, std::back_inserter(frames), zmq::recv_flags::dontwait))
                    continue;
                if (frames.size() < 2)
                    continue;
                // Route by group: another round's message waits for that round (bounded).
                std::string group;
                try {
                    const auto j = nlohmann::json::from_cbor(frames[1].data<std::uint8_t>(),
                                                             frames[1].data<std::uint8_t>() + frames[1].size());
                    group = j.at("g").get<std::string>();
                } catch (const std::exception &) {
                    log::warning("allreduce", "dropped a malformed message (header is not a CBOR map with a group)");
                    continue;
                }
                if (group != groupId) {
                    if (d->pending.size() < 4096 && group.size() <= 64)
                        d->pending.emplace(group, std::move(frames));
                    continue;
                }
                if (reduced || myShard == 0) {
                    log::warning("allreduce", "dropped a late or unexpected PART");
                    continue;
                }
                try {
                    handlePart(frames);
                } catch (const std::exception &e) {
                    log::warning("allreduce", std::string("dropped a message: ") + e.what());
                }
            } else {
                const std::size_t j = owner[k];
                if (!zmq::recv_multipart(*dealers[j], std::back_inserter(frames), zmq::recv_flags::dontwait))
                    continue;
                try {
                    if (frames.size() != 2)
                        throw ProtocolError("RESULT has " + std::to_string(frames.size()) + " frames");
                    const auto shard = static_cast<std::uint64_t>(report.shardSizes[j]);
                    const auto h = parseShardHeader({frames[0].data<std::uint8_t>(), frames[0].size()},
                                                    ShardSchema{groupId, static_cast<std::uint32_t>(n), shard,
                                                                options.partElements, options.codec});
                    if (h.type != MessageType::Result || h.shard != j)
                        throw ProtocolError("not a RESULT for shard " + std::to_string(j));
                    std::vector<float> piece(h.count);
                    decode(h.codec, {frames[1].data<std::uint8_t>(), frames[1].size()}, piece);
                    for (float x : piece)
                        if (!std::isfinite(x))
                            throw ProtocolError("RESULT carries a non-finite value");
                    std::copy(piece.begin(), piece.end(), values.begin() + static_cast<std::ptrdiff_t>(shardOffset[j] + h.offset));
                    receivedBack[j] += h.count;
                    report.groupWeight = std::max(report.groupWeight, h.weight);
                } catch (const std::exception &e) {
                    log::warning("allreduce", std::string("dropped a result: ") + e.what());
                }
            }
        }
    }

    std::uint64_t expected = 0, received = 0;
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
