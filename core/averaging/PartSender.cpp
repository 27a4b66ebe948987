#include "averaging/PartSender.h"

#include "net/DataPlaneSecurity.h"
#include "net/WireMessage.h"
#include "util/Error.h"
#include "util/Log.h"

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <algorithm>
#include <array>
#include <cmath>

namespace dedloc::allreduce {

namespace {

// Messages (PARTs) a sender keeps queued per reducer before it waits for room (ZeroMQ's send
// high-water mark counts whole multipart messages), on top of what the kernel buffers: so that a
// part handed over is nearly a part sent, and moving on to the next reducer (sendSome) really
// moves the uplink's one flow there.
constexpr int SendQueue = 1;

} // namespace

double RoundContext::elapsed() const
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int sendBufferBytes(double uploadMbit, double roundTripSeconds)
{
    constexpr double Least = 64 * 1024, Most = 4 << 20;
    const double rtt = std::isfinite(roundTripSeconds) ? std::clamp(roundTripSeconds, 0.0, 10.0) : 0.0;
    const double bytes = std::isfinite(uploadMbit) ? uploadMbit * 1e6 / 8.0 * (0.05 + rtt / 2.0) : 0.0;
    return static_cast<int>(std::clamp(bytes, Least, Most));
}

std::vector<Piece> pieces(std::uint64_t elements, std::size_t partElements)
{
    std::vector<Piece> out;
    for (std::uint64_t o = 0; o < elements; o += partElements)
        out.push_back({o, std::min<std::uint64_t>(partElements, elements - o)});
    return out;
}

// My values for every other reducer's shard go out on a DEALER to it. Parts are encoded and sent
// from the runner's poll loop (sendSome), and only while a DEALER's queue has room (SendQueue
// messages when staggered, else 8): a slow link backs up into the loop instead of into an
// unbounded queue, and a dead reducer costs no memory. Staggered, the reducers are fed one after
// the other, in the order after my own index (PartSender.h); otherwise all at once, round-robin.
PartSender::PartSender(const RoundContext &round, zmq::context_t &context, int receiveQueue, DealerPool *pool)
    : m_round(round), m_dealers(round.size()), m_keys(round.size()), m_outgoing(round.size()),
      m_nextPart(round.size(), 0), m_expectedBack(round.size(), 0), m_receivedBack(round.size(), 0),
      m_resultSeen(round.size()), m_lastProgress(round.size(), 0.0), m_resultPiece(round.partElements),
      m_window(round.staggered, round.size())
{
    if (!round.iSend())
        return;
    for (std::size_t j = 0; j < round.size(); ++j)
        if (j != round.me && round.shardSizes[j] != 0)
            connect(j, receiveQueue, context, pool);
}

PartSender::~PartSender() = default;

DealerKey PartSender::keyOf(std::size_t j, int receiveQueue) const
{
    const auto &member = m_round.members[j];
    DealerKey key{member.endpoint, member.publicKey};
    // Staggered: a short queue and a send buffer of the round trip; else deeper queues keep a
    // fast uplink busy between turns of the loop.
    key.sendQueue = m_round.staggered ? SendQueue : 8;
    key.sendBuffer = m_round.staggered ? sendBufferBytes(m_round.uploadMbit, m_round.roundTripSeconds) : 0;
    key.receiveQueue = receiveQueue;
    return key;
}

std::unique_ptr<zmq::socket_t> PartSender::open(const DealerKey &key, zmq::context_t &context) const
{
    auto s = std::make_unique<zmq::socket_t>(context, zmq::socket_type::dealer);
    s->set(zmq::sockopt::linger, 0);
    s->set(zmq::sockopt::sndhwm, key.sendQueue);
    if (key.sendBuffer > 0)
        s->set(zmq::sockopt::sndbuf, key.sendBuffer);
    s->set(zmq::sockopt::rcvhwm, key.receiveQueue);
    s->set(zmq::sockopt::maxmsgsize, MaxDataPlaneFrameBytes);
    if (m_round.security)
        m_round.security->configureClient(*s, key.publicKey);
    s->connect(key.endpoint);
    return s;
}

void PartSender::connect(std::size_t j, int receiveQueue, zmq::context_t &context, DealerPool *pool)
{
    const auto &member = m_round.members[j];
    // Closed run: never hand gradients to a member whose access token we have not verified.
    // Either way its shard keeps local values, without waiting for it.
    std::string refusal = m_round.security ? m_round.security->admission(member.publicKey) : std::string();
    auto key = keyOf(j, receiveQueue);
    std::unique_ptr<zmq::socket_t> s;
    if (refusal.empty()) {
        try {
            s = pool ? pool->take(key, PoolClock::now(), &key) : nullptr;
            if (!s)
                s = open(key, context);
        } catch (const Error &e) {
            refusal = e.what();
        }
    }
    if (!refusal.empty()) {
        log::warning("allreduce", "group " + m_round.groupId + ": not sending to member " + std::to_string(j) + " ("
                                      + member.peerId.substr(0, 8) + "): " + refusal);
        m_skippedBack += m_round.shard(j);
        return;
    }
    m_outgoing[j] = pieces(m_round.shard(j), m_round.partElements);
    m_expectedBack[j] = m_round.shard(j);
    m_resultSeen[j].assign(m_outgoing[j].size(), false);
    m_dealers[j] = std::move(s);
    m_keys[j] = std::move(key);
}

void PartSender::keepConnections(DealerPool &pool)
{
    const auto now = PoolClock::now();
    for (std::size_t j = 0; j < m_round.size(); ++j)
        if (m_dealers[j] && m_receivedBack[j] >= m_expectedBack[j] && !hasPartsFor(j))
            pool.give(std::move(m_keys[j]), std::move(m_dealers[j]), now);
}

bool PartSender::hasPartsFor(std::size_t j) const
{
    return m_nextPart[j] < m_outgoing[j].size();
}

bool PartSender::sendSome(int budget)
{
    const std::size_t n = m_round.size();
    // Under an upload cap each part may wait for tokens: give the loop back after MaxSendSlice,
    // so that the round's time limit and results are seen between parts.
    const double sliceEnd = m_round.elapsed() + MaxSendSlice;
    keepReducersWaiting(budget);
    bool progress = true;
    while (budget > 0 && progress && m_round.elapsed() < sliceEnd) {
        progress = false;
        std::size_t fed = 0; // reducers with parts left, in my order: only the first m_window get any
        for (std::size_t k = 1; k < n && budget > 0; ++k) {
            const std::size_t j = (m_round.me + k) % n;
            if (!m_dealers[j] || !hasPartsFor(j))
                continue;
            if (!m_window.admits(fed++))
                break;
            if (!(m_dealers[j]->get(zmq::sockopt::events) & ZMQ_POLLOUT))
                continue;
            if (!sendPart(j))
                continue;
            --budget;
            progress = true;
            m_window.handedOver(m_round.elapsed());
        }
    }
    // A reducer that takes nothing (gone, or its downlink stalled) must not hold up the others.
    m_window.widenIfStalled(m_round.elapsed());
    // Only a reducer fed now counts as room to send: a staggered sender's reducers not in turn
    // always have room, and counting them had the round's loop poll without waiting (a core spun
    // by each member for the whole of its parts).
    bool more = false, pending = false;
    for (std::size_t j = 0; j < n; ++j)
        if (m_dealers[j] && hasPartsFor(j)) {
            pending = true;
            more = more || (feeds(j) && (m_dealers[j]->get(zmq::sockopt::events) & ZMQ_POLLOUT));
        }
    if (!pending && m_sentAt < 0)
        m_sentAt = m_round.elapsed();
    return more;
}

bool PartSender::feeds(std::size_t j) const
{
    if (!m_dealers[j] || !hasPartsFor(j))
        return false;
    const std::size_t n = m_round.size();
    std::size_t rank = 0; // reducers with parts left ranked before j, in my order
    for (std::size_t k = 1; k < n; ++k) {
        const std::size_t r = (m_round.me + k) % n;
        if (r == j)
            break;
        if (m_dealers[r] && hasPartsFor(r))
            ++rank;
    }
    return m_window.admits(rank);
}

// One part to each reducer not in turn that has had none for a third of the sender timeout (the
// staggered schedule in PartSender.h).
void PartSender::keepReducersWaiting(int &budget)
{
    const double now = m_round.elapsed();
    for (std::size_t j = 0; j < m_round.size() && budget > 0; ++j)
        if (m_dealers[j] && hasPartsFor(j) && now - m_lastProgress[j] > m_round.senderTimeout / 3.0
            && (m_dealers[j]->get(zmq::sockopt::events) & ZMQ_POLLOUT) && sendPart(j))
            --budget;
}

// Encodes and sends the next part for reducer j, whose DEALER has room; true if it was sent.
bool PartSender::sendPart(std::size_t j)
{
    const auto &round = m_round;
    const auto p = m_nextPart[j];
    const auto &piece = m_outgoing[j][p];
    ShardHeader h{MessageType::Part,
                        round.groupId,
                        static_cast<std::uint32_t>(round.me),
                        static_cast<std::uint32_t>(j),
                        p,
                        static_cast<std::uint32_t>(m_outgoing[j].size()),
                        piece.offset,
                        piece.count,
                        round.myWeight,
                        round.codec};
    // Encode straight into the message: one copy less per part. A sender of weight 0 counts for
    // nothing in the average: its PARTs carry no values (an empty payload, taken as zeros), and
    // only let the reducer know where to send the result.
    const bool weightless = round.myWeight == 0.0;
    zmq::message_t payload(weightless ? 0 : encodedBytes(round.codec, piece.count));
    if (!weightless)
        encodeInto(round.codec, round.values.subspan(round.shardOffsets[j] + piece.offset, piece.count),
                   {payload.data<std::uint8_t>(), payload.size()});
    if (round.tamperPart && !weightless)
        (*round.tamperPart)(h.weight, {payload.data<std::uint8_t>(), payload.size()});
    if (round.evidence && !weightless)
        round.evidence->keepSent(j, p, payload);
    if (round.upload)
        round.upload->acquire(payload.size());
    const auto header = encodeShardHeader(h);
    std::array<zmq::message_t, 2> frames{zmq::message_t(header.data(), header.size()), std::move(payload)};
    // POLLOUT was set, so the first frame is accepted, and ZeroMQ then takes the
    // whole multipart message.
    if (!zmq::send_multipart(*m_dealers[j], frames, zmq::send_flags::dontwait))
        return false;
    ++m_nextPart[j];
    m_lastProgress[j] = round.elapsed();
    return true;
}

void PartSender::handleResult(std::size_t j, const std::vector<zmq::message_t> &frames)
{
    if (frames.size() != 2)
        throw ProtocolError("RESULT has " + std::to_string(frames.size()) + " frames");
    const auto h = parseShardHeader({frames[0].data<std::uint8_t>(), frames[0].size()},
                                    ShardSchema{m_round.groupId, static_cast<std::uint32_t>(m_round.size()),
                                                m_round.shard(j), m_round.partElements, resultCodec(m_round.codec)});
    if (h.type != MessageType::Result || h.shard != j)
        throw ProtocolError("not a RESULT for shard " + std::to_string(j));
    if (h.part >= m_resultSeen[j].size() || m_resultSeen[j][h.part])
        throw ProtocolError("duplicate or unexpected RESULT part " + std::to_string(h.part));
    if (m_round.maxWeight > 0.0 && h.weight > m_round.maxWeight * static_cast<double>(m_round.size()))
        throw ProtocolError("RESULT claims a total weight of " + std::to_string(h.weight)
                            + " samples, more than the group's senders may have");
    const std::span<float> piece(m_resultPiece.data(), h.count);
    decode(h.codec, {frames[1].data<std::uint8_t>(), frames[1].size()}, piece);
    for (float x : piece)
        if (!std::isfinite(x))
            throw ProtocolError("RESULT carries a non-finite value");
    std::copy(piece.begin(), piece.end(),
              m_round.values.begin() + static_cast<std::ptrdiff_t>(m_round.shardOffsets[j] + h.offset));
    if (m_round.capture)
        m_round.capture->push_back({m_round.shardOffsets[j] + h.offset, h.count,
                                    {frames[1].data<std::uint8_t>(), frames[1].data<std::uint8_t>() + frames[1].size()}});
    if (m_round.evidence)
        m_round.evidence->keepResult(j, h.part, h.radius, h.counted, h.weight, const_cast<zmq::message_t &>(frames[1]));
    m_resultSeen[j][h.part] = true;
    m_receivedBack[j] += h.count;
    m_lastProgress[j] = m_round.elapsed();
    m_resultWeight = std::max(m_resultWeight, h.weight);
    m_minResultWeight = std::min(m_minResultWeight, h.weight);
}

bool PartSender::resultsDone() const
{
    for (std::size_t j = 0; j < m_round.size(); ++j)
        if (m_receivedBack[j] < m_expectedBack[j])
            return false;
    return true;
}

bool PartSender::resultsStalled(double silence) const
{
    const double now = m_round.elapsed();
    for (std::size_t j = 0; j < m_round.size(); ++j)
        if (m_receivedBack[j] < m_expectedBack[j] && now - m_lastProgress[j] < silence)
            return false;
    return true;
}

std::uint64_t PartSender::expectedElements() const
{
    std::uint64_t expected = m_skippedBack;
    for (auto e : m_expectedBack)
        expected += e;
    return expected;
}

std::uint64_t PartSender::receivedElements() const
{
    std::uint64_t received = 0;
    for (std::size_t j = 0; j < m_round.size(); ++j)
        received += std::min(m_receivedBack[j], m_expectedBack[j]);
    return received;
}

} // namespace dedloc::allreduce
