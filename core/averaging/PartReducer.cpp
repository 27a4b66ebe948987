#include "averaging/PartReducer.h"

#include "averaging/RobustAggregation.h"
#include "net/DataPlaneSecurity.h"
#include "util/Log.h"

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace dedloc::allreduce {

PartReducer::PartReducer(const RoundContext &round, zmq::socket_t *router)
    : m_round(round), m_router(router), m_parts(pieces(round.shard(round.me), round.partElements)),
      m_partStates(m_parts.size()), m_senders(round.size()),
      m_expectedSender(round.size(), false), m_outliers(round.size(), false), m_judged(round.size(), false),
      m_schema{round.groupId, static_cast<std::uint32_t>(round.size()), round.shard(round.me), round.partElements,
               round.codec},
      m_blockParts(blockPartsOf(round)),
      m_average(std::min<std::uint64_t>(round.shard(round.me), m_blockParts * round.partElements)),
      m_resultWindow(round.staggered, round.size())
{
    for (auto &ps : m_partStates)
        ps.values.resize(round.size());
    m_resultPayloads.resize(m_parts.size());
    m_resultHeaders.resize(m_parts.size());
    m_resultFields.resize(m_parts.size());
    m_blockRadius.assign(blocks(), -1.0);
    m_blockCounted.resize(blocks());
    m_resultQueue.resize(round.size());
    m_resultPaid.assign(round.size(), false);

    if (round.shard(round.me) > 0)
        for (std::size_t i = 0; i < round.size(); ++i)
            if (i != round.me && round.members[i].weight > 0.0) {
                m_expectedSender[i] = true;
                ++m_expectedCount;
            }
}

PartReducer::~PartReducer() = default;

std::size_t blockPartsOf(const RoundContext &round)
{
    return round.aggregation.rule == AggregationRule::Mean ? 1
                                                           : std::max<std::size_t>(1, ClipBlockElements / round.partElements);
}

void PartReducer::handlePart(const std::vector<zmq::message_t> &frames)
{
    // frames: routing id, header, payload
    if (frames.size() != 3)
        throw ProtocolError("PART has " + std::to_string(frames.size()) + " frames, expected 3");
    const auto h = parseShardHeader({frames[1].data<std::uint8_t>(), frames[1].size()}, m_schema);
    checkPart(h, frames[1]);
    if (m_round.maxWeight > 0.0 && h.weight > m_round.maxWeight)
        throw ProtocolError("PART claims a weight of " + std::to_string(h.weight) + " samples, above the bound of "
                            + std::to_string(m_round.maxWeight));
    auto &s = m_senders[h.sender];
    if (!s.weightKnown) {
        s.claimed = h.weight;
        s.weight = clippedWeight(h.sender, h.weight);
        s.weightKnown = true;
    } else if (h.weight != s.claimed) {
        throw ProtocolError("PART changes the sender's weight");
    }
    auto &ps = m_partStates[h.part];
    if (ps.reduced || s.excluded) { // a slow sender, excluded at the sender timeout: not an offence
        log::debug("allreduce", "group " + m_round.groupId + ": late PART " + std::to_string(h.part) + " of member " +
                                    std::to_string(h.sender) + " (already reduced)");
        return;
    }
    auto &slot = ps.values[h.sender];
    if (!slot.empty())
        throw ProtocolError("duplicate PART " + std::to_string(h.part));
    std::vector<float> piece(h.count); // zeros: what an empty payload of weight 0 stands for
    if (frames[2].size() != 0 || h.weight != 0.0)
        decode(h.codec, {frames[2].data<std::uint8_t>(), frames[2].size()}, piece);
    for (float x : piece)
        if (!std::isfinite(x))
            throw ProtocolError("PART carries a non-finite value");
    slot = std::move(piece);
    if (m_round.evidence)
        m_round.evidence->keepPart(h.sender, h.part, const_cast<zmq::message_t &>(frames[2]));
    s.routingId.assign(frames[0].data<char>(), frames[0].size());
    ++s.partsReceived;
    s.lastHeardAt = m_round.elapsed();
    if (blockReady(h.part / m_blockParts))
        reduceBlock(h.part / m_blockParts);
}

double PartReducer::clippedWeight(std::size_t sender, double claimed) const
{
    const double bound = sender < m_round.weightBounds.size() ? m_round.weightBounds[sender]
                                                               : std::numeric_limits<double>::infinity();
    if (!(claimed > bound))
        return claimed;
    log::info("allreduce", "group " + m_round.groupId + ": member " + std::to_string(sender) + " claims a weight of "
                               + std::to_string(static_cast<long>(claimed)) + " samples; counted as "
                               + std::to_string(static_cast<long>(bound)) + ", what its progress records were counted for");
    return std::max(0.0, bound);
}

bool PartReducer::blockReady(std::size_t b) const
{
    const std::size_t first = b * m_blockParts, last = std::min(first + m_blockParts, m_parts.size());
    for (std::size_t p = first; p < last; ++p)
        if (m_partStates[p].reduced || !partReady(p))
            return false;
    return true;
}

std::size_t PartReducer::blocks() const
{
    return (m_parts.size() + m_blockParts - 1) / m_blockParts;
}

bool PartReducer::partReady(std::size_t p) const
{
    for (std::size_t i = 0; i < m_round.size(); ++i)
        if (m_expectedSender[i] && !m_senders[i].excluded && m_partStates[p].values[i].empty())
            return false;
    return true;
}

void PartReducer::exclude(std::size_t sender)
{
    m_senders[sender].excluded = true;
    m_excluded.insert(std::upper_bound(m_excluded.begin(), m_excluded.end(), sender), static_cast<std::uint32_t>(sender));
}

bool PartReducer::excludeSilentSenders(double silence)
{
    const double now = m_round.elapsed();
    std::size_t count = 0;
    for (std::size_t i = 0; i < m_round.size(); ++i) {
        const auto &s = m_senders[i];
        if (m_expectedSender[i] && !s.excluded && s.partsReceived < m_parts.size() && now - s.lastHeardAt >= silence) {
            exclude(i);
            ++count;
        }
    }
    if (count == 0)
        return false;
    log::warning("allreduce", "group " + m_round.groupId + ": " + std::to_string(count) + " sender(s) silent for "
                                  + std::to_string(silence) + " s excluded from (part of) shard "
                                  + std::to_string(m_round.me) + " (sender timeout)");
    for (std::size_t b = 0; b < blocks(); ++b)
        if (blockReady(b))
            reduceBlock(b);
    return true;
}

void PartReducer::heardFrom(std::size_t member)
{
    if (member < m_senders.size())
        m_senders[member].lastHeardAt = m_round.elapsed();
}

// The checks of a parsed PART header that need the round: type, shard, sender, its connection's
// key and the agreed layout.
void PartReducer::checkPart(const ShardHeader &h, const zmq::message_t &headerFrame) const
{
    const auto me = m_round.me;
    if (h.type != MessageType::Part || h.shard != me)
        throw ProtocolError("not a PART for shard " + std::to_string(me));
    if (!m_expectedSender[h.sender])
        throw ProtocolError("member " + std::to_string(h.sender) + " is not a sender of this round");
    if (m_round.security) {
        // The header names the sender; the CURVE handshake proved who is on this connection.
        const auto key = DataPlaneSecurity::senderKey(headerFrame);
        if (!key || *key != m_round.curveKeys[h.sender])
            throw ProtocolError("PART claims to come from member " + std::to_string(h.sender) +
                                " but the connection is not that member's key");
    }
    if (h.parts != m_parts.size() || h.offset != m_parts[h.part].offset || h.count != m_parts[h.part].count)
        throw ProtocolError("PART does not match the agreed shard layout");
}

void PartReducer::reduceBlock(std::size_t b)
{
    const auto &round = m_round;
    const std::size_t first = b * m_blockParts, last = std::min(first + m_blockParts, m_parts.size());
    const std::uint64_t begin = m_parts[first].offset, count = m_parts[last - 1].offset + m_parts[last - 1].count - begin;
    // Each sender that delivered every part of the block (this member too, if it sends), in
    // member order so that every reducer sums alike; a block of several parts is copied into
    // one contiguous piece per sender.
    std::vector<const float *> xs;
    std::vector<double> ws;
    std::vector<std::size_t> who;
    std::vector<std::vector<float>> joined;
    joined.reserve(round.size());
    for (std::size_t i = 0; i < round.size(); ++i) {
        if (i == round.me && round.iSend()) {
            xs.push_back(round.values.data() + round.shardOffsets[round.me] + begin);
            if (round.evidence)
                round.evidence->keepOwnValues(begin, {xs.back(), count});
            ws.push_back(round.myWeight);
            who.push_back(i);
            continue;
        }
        bool all = i != round.me;
        for (std::size_t p = first; all && p < last; ++p)
            all = !m_partStates[p].values[i].empty();
        if (!all)
            continue;
        if (last - first == 1) {
            xs.push_back(m_partStates[first].values[i].data());
        } else {
            auto &piece = joined.emplace_back();
            piece.reserve(count);
            for (std::size_t p = first; p < last; ++p)
                piece.insert(piece.end(), m_partStates[p].values[i].begin(), m_partStates[p].values[i].end());
            xs.push_back(piece.data());
        }
        ws.push_back(m_senders[i].weight);
        who.push_back(i);
    }
    for (std::size_t p = first; p < last; ++p) {
        m_partStates[p].reduced = true;
        ++m_partsReduced;
    }
    if (!xs.empty()) { // else nobody to average: the block keeps its local values
        std::vector<SenderFit> fits;
        auto &counted = m_blockCounted[b];
        counted.assign(round.size(), 0.0);
        for (std::size_t k = 0; k < who.size(); ++k)
            counted[who[k]] = ws[k];
        const double shardWeight =
            aggregateParts(round.aggregation, xs, std::move(ws), {m_average.data(), count}, &fits, &m_blockRadius[b]);
        if (round.evidence)
            round.evidence->keepBlock(static_cast<std::uint32_t>(b), m_blockRadius[b], counted, shardWeight);
        if (round.tamperAverage)
            (*round.tamperAverage)({m_average.data(), count});
        noteOutliers(first, who, fits);
        m_shardWeight = std::max(m_shardWeight, shardWeight);
        for (std::size_t p = first; p < last; ++p)
            returnPart(p, std::span<const float>(m_average).subspan(m_parts[p].offset - begin, m_parts[p].count),
                       shardWeight);
    }
    for (std::size_t p = first; p < last; ++p)
        for (auto &v : m_partStates[p].values)
            std::vector<float>().swap(v);
}

// Encodes part p's average, applies exactly what the others receive (so that every member ends
// bitwise equal) and queues it for the senders.
void PartReducer::returnPart(std::size_t p, std::span<const float> average, double shardWeight)
{
    const auto &round = m_round;
    const auto piece = m_parts[p];
    const auto codec = resultCodec(round.codec);
    zmq::message_t payload;
    if (isVariableLength(codec)) {
        const auto bytes = encode(codec, average);
        payload.rebuild(bytes.data(), bytes.size());
    } else {
        payload.rebuild(encodedBytes(codec, piece.count));
        encodeInto(codec, average, {payload.data<std::uint8_t>(), payload.size()});
    }
    decode(codec, {payload.data<std::uint8_t>(), payload.size()},
           round.values.subspan(round.shardOffsets[round.me] + piece.offset, piece.count));
    if (round.capture)
        round.capture->push_back({round.shardOffsets[round.me] + piece.offset, piece.count,
                                  {payload.data<std::uint8_t>(), payload.data<std::uint8_t>() + payload.size()}});
    if (round.evidence)
        round.evidence->keepOwnResult(static_cast<std::uint32_t>(p), payload);
    sendResult(p, payload, shardWeight);
}

void PartReducer::noteOutliers(std::size_t p, const std::vector<std::size_t> &who, const std::vector<SenderFit> &fits)
{
    for (std::size_t j = 0; j < who.size(); ++j) {
        const auto i = who[j];
        if (i != m_round.me && fits[j].judged)
            m_judged[i] = true;
        if (!fits[j].outlier || i == m_round.me || m_outliers[i])
            continue;
        m_outliers[i] = true;
        log::warning("allreduce", "group " + m_round.groupId + ": member " + std::to_string(i) + "'s block at part "
                                      + std::to_string(p) + " lies far from the others' (counted at "
                                      + std::to_string(fits[j].clip) + " of its weight)");
    }
}

// Queues part p's encoded average for every sender that delivered a PART; sendSomeResults()
// hands them to the ROUTER.
void PartReducer::sendResult(std::size_t p, zmq::message_t &payload, double shardWeight)
{
    const auto &round = m_round;
    const auto me = static_cast<std::uint32_t>(round.me);
    const ShardHeader h{MessageType::Result,
                        round.groupId,
                        me,
                        me,
                        static_cast<std::uint32_t>(p),
                        static_cast<std::uint32_t>(m_parts.size()),
                        m_parts[p].offset,
                        m_parts[p].count,
                        shardWeight,
                        resultCodec(round.codec)};
    m_resultHeaders[p] = encodeShardHeader(h);
    m_resultFields[p] = h;
    m_resultPayloads[p].move(payload);
    for (std::size_t i = 0; i < round.size(); ++i)
        if (i != round.me && !m_senders[i].routingId.empty())
            m_resultQueue[i].push_back(static_cast<std::uint32_t>(p));
    sendSomeResults();
}

bool PartReducer::resultsPending() const
{
    for (const auto &q : m_resultQueue)
        if (!q.empty())
            return true;
    return false;
}

void PartReducer::sendSomeResults()
{
    const std::size_t n = m_round.size();
    const double sliceEnd = m_round.elapsed() + MaxSendSlice;
    bool progress = true;
    while (progress && m_round.elapsed() < sliceEnd) {
        progress = false;
        std::size_t fed = 0; // senders owed results, in my order: only the first m_resultWindow get any
        for (std::size_t k = 1; k < n; ++k) {
            const std::size_t i = (m_round.me + k) % n;
            auto &queue = m_resultQueue[i];
            if (queue.empty())
                continue;
            if (!m_resultWindow.admits(fed++))
                break;
            if (handOverResult(i, queue.front())) {
                queue.pop_front();
                progress = true;
                m_resultWindow.handedOver(m_round.elapsed());
            }
        }
    }
    // A sender that takes nothing must not hold up the others (PartSender.h, StaggerPatience).
    if (resultsPending())
        m_resultWindow.widenIfStalled(m_round.elapsed());
}

bool PartReducer::handOverResult(std::size_t i, std::uint32_t p)
{
    const auto &payload = m_resultPayloads[p];
    if (m_round.upload && !m_resultPaid[i]) {
        m_round.upload->acquire(payload.size());
        m_resultPaid[i] = true;
    }
    zmq::message_t shared;
    shared.copy(const_cast<zmq::message_t &>(payload)); // reference-counted: no copy of the bytes
    const auto &routingId = m_senders[i].routingId;
    std::array<zmq::message_t, 3> frames{zmq::message_t(routingId.data(), routingId.size()), resultHeaderFor(i, p),
                                         std::move(shared)};
    try {
        if (!zmq::send_multipart(*m_router, frames, zmq::send_flags::dontwait))
            return false; // its queue is full
    } catch (const zmq::error_t &e) { // gone (EHOSTUNREACH): nobody to send its results to
        log::debug("allreduce", "group " + m_round.groupId + ": member " + std::to_string(i) + " is gone ("
                                    + e.what() + "): its results are dropped");
        m_resultQueue[i].clear();
        return false;
    }
    m_resultPaid[i] = false;
    return true;
}

zmq::message_t PartReducer::resultHeaderFor(std::size_t i, std::uint32_t p) const
{
    if (!m_round.evidence) {
        const auto &header = m_resultHeaders[p];
        return zmq::message_t(header.data(), header.size());
    }
    auto h = m_resultFields[p];
    const auto b = p / m_blockParts;
    h.radius = m_blockRadius[b];
    h.counted = i < m_blockCounted[b].size() ? m_blockCounted[b][i] : 0.0;
    const auto header = encodeShardHeader(h);
    return zmq::message_t(header.data(), header.size());
}

void PartReducer::finishShard(bool timedOut)
{
    for (std::size_t b = 0; b < blocks(); ++b)
        if (!m_partStates[b * m_blockParts].reduced)
            reduceBlock(b);
    std::size_t count = 0;
    for (std::size_t i = 0; i < m_round.size(); ++i)
        if (m_expectedSender[i] && !m_senders[i].excluded && m_senders[i].partsReceived < m_parts.size()) {
            exclude(i);
            ++count;
        }
    if (count > 0) {
        log::warning("allreduce", "group " + m_round.groupId + ": " + std::to_string(count) +
                                      " sender(s) excluded from (part of) shard " + std::to_string(m_round.me) +
                                      (timedOut ? " (round time limit)" : ""));
    }
    m_reducedAt = m_round.elapsed();
}

} // namespace dedloc::allreduce
