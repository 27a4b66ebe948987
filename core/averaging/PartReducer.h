#pragma once
// The reducer side of one butterfly all-reduce round (DeDLOC section 3.2; docs/PROTOCOL.md
// "Butterfly all-reduce data plane"; hivemind's TensorPartReducer), internal to
// averaging/ButterflyAllReduce.cpp. RoundContext and the message layout: averaging/PartSender.h.
//
// This member's shard is reduced block by block (a few parts, see below), each as soon as every
// expected sender (every other member with weight > 0) delivered it, and each part's result is
// queued at once for the senders that delivered any part (returned in the staggered schedule of
// PartSender.h), so that reduction overlaps the transfer. A part's average is
//     avg = sum_i w_i x_i / sum_i w_i          (w_i = the weight in sender i's PART headers)
// over the senders that delivered it (and this member, if it sends), summed in member order; if
// every weight is 0 it is the plain mean. Parts are aggregated in blocks of whole parts
// (ClipBlockElements below; one part for the mean): a block is reduced once every expected sender delivered all of its
// parts, over the senders that delivered all of them, and its parts are returned one by one. Members apply to their own shard the encoded-then-decoded
// average they send, so all members end with bitwise-identical values.
// A sender that still misses parts and has been silent for the sender timeout (since the round
// started, nothing from it: no PART, and no RESULT on this member's own connection to it, see
// heardFrom()) is excluded by excludeSilentSenders(): the parts that waited only for it are
// reduced at once over the others, and its later PARTs are dropped as late, so one silent sender
// never holds up the others, and a slow one that keeps delivering to anyone is never cut off.
// finishShard() reduces whatever still waits (the round's hard limit) and names every sender that
// missed a part as excluded.
//
// Threads: the thread that runs the round. Errors: handlePart() raises ProtocolError (or
// dedloc::Error from the codec) for a PART it refuses; a PART for a part already reduced is
// dropped with a debug line.
#include "averaging/PartSender.h"
#include "averaging/RobustAggregation.h"
#include "net/WireMessage.h"

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace dedloc::allreduce {

// Elements aggregated together: the robust aggregation clips a sender's values over blocks of
// this many consecutive elements of a shard (whole parts: ClipBlockElements / partElements of
// them, at least one), not over each part; the mean, which clips nothing, takes each part alone
// (so its results stream back part by part). Parts are small for the transport's sake (PartSender.h);
// over 16 Ki elements of a gradient an honest sender's values can lie far from the others' (an
// embedding's rows only its own batch touched), and CenteredClip took honest members for outliers.
inline constexpr std::size_t ClipBlockElements = 128 * 1024;
// Parts per aggregation block of `round`'s reducers (one for the mean).
[[nodiscard]] std::size_t blockPartsOf(const RoundContext &round);

class PartReducer final {
  public:
    // `router`: this member's ROUTER, on which PARTs arrive and RESULTs leave; it must be set when
    // this member has a shard. The senders expected are the other members with weight > 0.
    PartReducer(const RoundContext &round, zmq::socket_t *router);
    ~PartReducer();
    PartReducer(const PartReducer &) = delete;
    PartReducer &operator=(const PartReducer &) = delete;

    // Takes a PART [routing id, header, payload] from the ROUTER (a message of this round, for a
    // member with a shard) and reduces its part once every expected sender delivered it.
    // Throws ProtocolError (dedloc::Error for a payload of the wrong size) when the message is not
    // one this round expects: wrong frames, header or layout, a sender that is not expected or
    // (secured rounds) not on its own key's connection, a changed weight, a duplicate, a
    // non-finite value.
    void handlePart(const std::vector<zmq::message_t> &frames);

    // Whether this member has a shard but no sender to wait for (its shard is its alone).
    [[nodiscard]] bool alone() const { return !m_parts.empty() && m_expectedCount == 0; }
    [[nodiscard]] bool allPartsReduced() const { return m_partsReduced == m_parts.size(); }
    // Excludes each sender that misses a part and has been silent for `silence` seconds (see
    // above), then reduces the parts no remaining sender owes. Returns whether it excluded one.
    bool excludeSilentSenders(double silence);
    // Member i proved itself alive by a message other than a PART for this shard (a RESULT it
    // returned to this member): restarts its silence clock. A staggered sender on a slow uplink
    // may reach this reducer last, while its link is busy with others' parts and results.
    void heardFrom(std::size_t member);
    // Reduces the parts not reduced yet over what arrived and records the excluded senders (with
    // a warning; `timedOut`: a time limit ended the wait). Called at most once per round.
    void finishShard(bool timedOut);

    // Senders that missed at least one part of this member's shard, in member order.
    [[nodiscard]] const std::vector<std::uint32_t> &excludedSenders() const { return m_excluded; }
    // The largest sum of weights averaged into a part of this shard (samples; 0 for plain means).
    [[nodiscard]] double shardWeight() const { return m_shardWeight; }
    // Per member: whether any of its parts was an outlier (averaging/RobustAggregation.h).
    [[nodiscard]] const std::vector<bool> &outliers() const { return m_outliers; }
    // Per member: whether CenteredClip weighed any of its blocks (SenderFit::judged); never this member.
    [[nodiscard]] const std::vector<bool> &judged() const { return m_judged; }
    // Seconds into the round when finishShard() ran (0 if it did not).
    [[nodiscard]] double reducedAt() const { return m_reducedAt; }

    // Hands queued RESULTs to the ROUTER, one sender at a time in the order after this member
    // (PartSender.h, the staggered schedule), while the ROUTER's queue for it has room; returns
    // after MaxSendSlice seconds at most. The round's loop calls it between polls.
    void sendSomeResults();
    // Whether RESULTs still wait for the ROUTER.
    [[nodiscard]] bool resultsPending() const;
    // Seconds into the round when a RESULT was last handed to the ROUTER (0: none yet).
    [[nodiscard]] double lastResultHandOff() const { return m_resultWindow.lastHandOff(); }

  private:
    // Each sender of this round, as its PARTs tell.
    struct SenderState {
        double weight = 0.0;  // as counted here: the claim, clipped to the sender's bound
        double claimed = 0.0; // as its PART headers say
        bool weightKnown = false;
        std::uint32_t partsReceived = 0;
        double lastHeardAt = 0.0; // seconds into the round of its last PART (or heardFrom())
        bool excluded = false;   // silent past the sender timeout: its later PARTs are late
        std::string routingId;   // where to send the results back
    };
    // One part of this member's shard: each sender's decoded piece, until the part is reduced.
    struct PartState {
        std::vector<std::vector<float>> values; // per member; empty = not delivered
        bool reduced = false;
    };

    void checkPart(const ShardHeader &h, const zmq::message_t &headerFrame) const;
    // Whether every sender still expected has delivered part p.
    [[nodiscard]] bool partReady(std::size_t p) const;
    // Whether no part of block b is reduced yet and every one is ready.
    [[nodiscard]] bool blockReady(std::size_t b) const;
    // A sender's claimed weight as this reduction counts it: at most its bound
    // (RoundContext::weightBounds), with a log line when clipped.
    [[nodiscard]] double clippedWeight(std::size_t sender, double claimed) const;
    [[nodiscard]] std::size_t blocks() const;
    // Aggregates block b over the senders that delivered all of its parts and returns each part.
    void reduceBlock(std::size_t b);
    void returnPart(std::size_t p, std::span<const float> average, double shardWeight);
    // Records and logs the outliers among the senders `who` (member indices) of the block at part p.
    void noteOutliers(std::size_t p, const std::vector<std::size_t> &who, const std::vector<SenderFit> &fits);
    void exclude(std::size_t sender);
    // Queues part p's RESULT for every sender that delivered a PART, then sendSomeResults().
    void sendResult(std::size_t p, zmq::message_t &payload, double shardWeight);
    // Part p's RESULT header for sender i: the shared one, or in checked rounds one that says
    // what its block counted for i.
    [[nodiscard]] zmq::message_t resultHeaderFor(std::size_t i, std::uint32_t p) const;
    // Hands part p's RESULT for sender i to the ROUTER; false when its queue there is full or the
    // sender is gone (then its results are dropped).
    bool handOverResult(std::size_t i, std::uint32_t p);

    const RoundContext &m_round;
    zmq::socket_t *m_router;
    std::vector<Piece> m_parts; // of this member's shard
    std::vector<PartState> m_partStates;
    std::vector<SenderState> m_senders; // per member
    std::vector<bool> m_expectedSender; // per member
    std::vector<bool> m_outliers;       // per member
    std::vector<bool> m_judged;         // per member
    std::uint32_t m_expectedCount = 0;
    std::size_t m_partsReduced = 0;
    ShardSchema m_schema;         // what a PART for this shard must match
    std::size_t m_blockParts;     // parts per aggregation block (ClipBlockElements)
    std::vector<float> m_average; // one block's average
    std::vector<std::uint32_t> m_excluded;
    double m_shardWeight = 0.0;
    double m_reducedAt = 0.0;
    // RESULTs waiting for the ROUTER (the staggered schedule, PartSender.h).
    std::vector<zmq::message_t> m_resultPayloads;           // per part, once reduced (shared by reference)
    std::vector<std::vector<std::uint8_t>> m_resultHeaders; // per part
    std::vector<ShardHeader> m_resultFields;                // per part (checked rounds: per receiver)
    std::vector<double> m_blockRadius;                      // per block: tau (-1: averaged)
    std::vector<std::vector<double>> m_blockCounted;        // per block, per member
    std::vector<std::deque<std::uint32_t>> m_resultQueue;   // per member, the parts it is owed
    std::vector<bool> m_resultPaid; // per member: its next RESULT's bytes passed the upload cap already
    StaggerWindow m_resultWindow; // senders fed at once
};

} // namespace dedloc::allreduce
