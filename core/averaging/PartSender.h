#pragma once
// The two sides of one butterfly all-reduce round (DeDLOC section 3.2; docs/PROTOCOL.md
// "Butterfly all-reduce data plane"), internal to averaging/ButterflyAllReduce.cpp, which runs
// them:
//   - RoundContext: what both sides share, fixed when the round starts (group, members, shard
//     layout, codec, part size, the vector being averaged);
//   - PartSender (this header): this member's values for the other reducers' shards, sent part by
//     part on a DEALER to each of them, and the averaged RESULTs that come back on those DEALERs
//     (hivemind's TensorPartContainer);
//   - PartReducer (averaging/PartReducer.h): this member's own shard, reduced from the senders'
//     PARTs and returned to them as RESULTs (hivemind's TensorPartReducer).
// Message layout (docs/PROTOCOL.md "Butterfly all-reduce data plane"): a PART is [header, payload]
// on the DEALER ([routing id, header, payload] on the reducer's ROUTER); a RESULT is [routing id,
// header, payload] on the ROUTER and [header, payload] on the DEALER. Headers are
// net/WireMessage.h's ShardHeader; payloads are compress/Compression.h's encoding of the part's
// floats.
//
// Threads: a RoundContext, PartSender and PartReducer belong to the thread that runs the round.
// Errors: a malformed or unexpected message raises ProtocolError (net/WireMessage.h), or
// dedloc::Error from the codec for a payload of the wrong size, with the reason; the caller drops
// it and, when the link proves the sender, records an offence.
#include "averaging/ButterflyAllReduce.h"
#include "averaging/DealerPool.h"
#include "net/CurveSecurity.h"

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace zmq {
class context_t;
class socket_t;
class message_t;
} // namespace zmq

namespace dedloc::allreduce {

// What both sides of one round share. Built by the runner before either side; outlives both.
struct RoundContext {
    std::string groupId;
    std::span<const GroupMember> members;    // the group, n = members.size()
    std::size_t me = 0;                      // this member's index, < n
    std::vector<std::int64_t> shardSizes;    // elements per member (balanceShards), summing to values.size()
    std::vector<std::uint64_t> shardOffsets; // first element of each member's shard in `values`
    Compression codec = Compression::None;
    std::size_t partElements = 1;                // elements per message, > 0
    double myWeight = 0.0;                       // the weight in this member's PART headers (samples)
    double maxWeight = 0.0;                      // per sender (AllReduceOptions::maxWeight); 0: no bound
    std::vector<double> weightBounds;            // per member, AllReduceOptions::senderWeightBounds
    double senderTimeout = 15.0;                 // seconds (AllReduceOptions::senderTimeout)
    bool staggered = false;                      // AllReduceOptions::staggered
    double uploadMbit = 0.0;                     // AllReduceOptions::uploadMbit
    double roundTripSeconds = 0.0;               // AllReduceOptions::roundTripSeconds
    AggregationSpec aggregation;                 // how a part's copies combine (AllReduceOptions)
    std::span<float> values;                     // averaged in place
    TokenBucket *upload = nullptr;               // upload cap on PART and RESULT payloads; null: none
    std::vector<EncodedPiece> *capture = nullptr; // the averaged pieces applied (AllReduceOptions)
    RoundEvidence *evidence = nullptr;           // kept for the result check; null: not checked
    const std::function<void(std::span<float>)> *tamperAverage = nullptr; // AllReduceOptions (tests)
    const std::function<void(double &, std::span<std::uint8_t>)> *tamperPart = nullptr; // likewise
    const DataPlaneSecurity *security = nullptr; // null: plaintext links
    // Per member, the CURVE key its connections authenticate with (secured rounds only; all
    // zeros for a member whose identity key is invalid: it never matches a connection).
    std::vector<CurveKey> curveKeys;
    std::chrono::steady_clock::time_point start; // when the round started here

    [[nodiscard]] std::size_t size() const { return members.size(); }
    [[nodiscard]] std::uint64_t shard(std::size_t j) const { return static_cast<std::uint64_t>(shardSizes[j]); }
    // Whether this member sends its values (weight > 0); auxiliary members only reduce.
    [[nodiscard]] bool iSend() const { return members[me].weight > 0.0; }
    // Seconds since `start`.
    [[nodiscard]] double elapsed() const;
};

// Seconds one sendSome() call may spend before it returns to the round's loop.
inline constexpr double MaxSendSlice = 0.05;

// The staggered schedule (ours; hivemind and the paper send to every reducer at once), for a
// member whose uplink is slow and whose peers are near (AllReduceOptions::staggered,
// staggerUplink(); a faster one, or one with far peers, sends to every peer at once through
// deeper queues, and results go out as they are ready). Member i
// feeds its PARTs to one reducer at a time, in the order i+1, i+2, ... (mod n), and a reducer
// returns its RESULTs to one sender at a time in the same order, so that each home uplink
// carries one TCP flow and each reducer's downlink is fed by about one sender. With all at
// once, n - 1 flows per uplink overran the one shallow queue of a home router (a tbf of 100 ms
// here): 40-60 % of the bytes were sent again, and the round took 1.3-1.5x its bound at n = 8
// (docs/BENCHMARKS.md). Whenever nothing was handed over for StaggerPatience seconds (the peer
// in turn is gone or stalled), one more peer is fed at once, so a dead member never holds up
// the rest of the round. A reducer not in turn yet still gets one part whenever it has had none
// for a third of the sender timeout: it excludes a sender silent that long (PartReducer.h), and
// a sender that is slow, not dead, must never look silent to the reducers it comes to last.
inline constexpr double StaggerPatience = 0.5;

// The window of the staggered schedule, shared by both sides: the peers still owed something are
// ranked in this member's order (me+1, me+2, ...), and only the first few (its width) are fed.
// Staggered, the width starts at one peer and grows by one whenever nothing was handed over for
// StaggerPatience seconds; otherwise it admits everyone from the start. Times are seconds into
// the round.
class StaggerWindow final {
  public:
    StaggerWindow(bool staggered, std::size_t peers) : m_width(staggered ? 1 : peers), m_peers(peers) {}
    // Whether the peer ranked `rank` (0: the first still owed something) is fed now.
    [[nodiscard]] bool admits(std::size_t rank) const { return rank < m_width; }
    void handedOver(double now) { m_lastHandOff = now; }
    // Admits one more peer if nothing was handed over for StaggerPatience seconds.
    void widenIfStalled(double now)
    {
        if (m_width < m_peers && now - m_lastHandOff > StaggerPatience) {
            ++m_width;
            m_lastHandOff = now;
        }
    }
    [[nodiscard]] double lastHandOff() const { return m_lastHandOff; }

  private:
    std::size_t m_width, m_peers;
    double m_lastHandOff = 0.0;
};
// Kernel send buffer of a staggered sender's DEALERs (bytes; SO_SNDBUF, which Linux doubles):
// 50 ms plus half of `roundTripSeconds` of the uplink at `uploadMbit`, at least 64 KB (a 10 Mbit/s
// uplink's 50 ms), at most 4 MiB. Doubled, that is the round trip's worth of bytes in flight (the
// bandwidth-delay product a TCP flow needs to fill the uplink) plus 100 ms queued. Small, so that
// the schedule above decides what is on the wire, not a few MB queued in the kernel (left to the
// kernel's autotuning, the rounds took 1.28-1.40x their bound instead of 1.19-1.35x); but not
// smaller than the round trip, or each flow would wait for acknowledgements with the uplink idle
// (docs/BENCHMARKS.md, latency).
[[nodiscard]] int sendBufferBytes(double uploadMbit, double roundTripSeconds = 0.0);

// One message's range of a shard: elements [offset, offset + count) of it.
struct Piece {
    std::uint64_t offset = 0, count = 0;
};

// Splits [0, elements) into parts of at most `partElements` (> 0), in order.
[[nodiscard]] std::vector<Piece> pieces(std::uint64_t elements, std::size_t partElements);

// The sender side of one round.
class PartSender final {
  public:
    // If this member sends (weight > 0), opens a DEALER in `context` to every other member with a
    // shard, queueing at most 8 outgoing and `receiveQueue` incoming messages on it (0:
    // unbounded), or takes one kept from an earlier round from `pool` (null: always opens).
    // Secured rounds admit and authenticate each reducer first; one refused is logged and
    // skipped: its shard keeps local values and counts as expected but not received.
    PartSender(const RoundContext &round, zmq::context_t &context, int receiveQueue, DealerPool *pool = nullptr);
    ~PartSender();
    PartSender(const PartSender &) = delete;
    PartSender &operator=(const PartSender &) = delete;

    // Sends at most `budget` parts (to one reducer at a time when staggered, else round-robin over
    // all), never blocking on a socket and
    // returning after MaxSendSlice seconds even when an upload cap makes each part wait; returns
    // true while some DEALER can take more right now.
    bool sendSome(int budget);

    // The DEALER to reducer j, or null (no parts for it, or it was refused).
    [[nodiscard]] zmq::socket_t *dealer(std::size_t j) const { return m_dealers[j].get(); }
    // Whether parts for reducer j remain to be sent.
    [[nodiscard]] bool hasPartsFor(std::size_t j) const;
    // Whether reducer j is fed now: parts remain for it and it ranks within the staggered
    // schedule's window (every reducer with parts left, when not staggered). Only these are worth
    // waking up for when their DEALER has room: the others' empty queues always have room.
    [[nodiscard]] bool feeds(std::size_t j) const;

    // Checks a RESULT [header, payload] that arrived on the DEALER to reducer j and copies its
    // average into the values. Throws ProtocolError, or dedloc::Error for a payload of the wrong
    // size; the values are then untouched.
    void handleResult(std::size_t j, const std::vector<zmq::message_t> &frames);
    // Whether every part of every connected reducer's shard came back.
    [[nodiscard]] bool resultsDone() const;
    // Whether every reducer that still owes results has been silent for `silence` seconds: no
    // RESULT from it, and no PART sent to it, since then (the round's start if neither).
    [[nodiscard]] bool resultsStalled(double silence) const;

    // Elements of the other shards this member expected back (including refused reducers'), and
    // how many of them came back.
    [[nodiscard]] std::uint64_t expectedElements() const;
    [[nodiscard]] std::uint64_t receivedElements() const;
    // The largest shard weight in a RESULT received (samples; 0 if none).
    [[nodiscard]] double resultWeight() const { return m_resultWeight; }
    // The smallest shard weight in a RESULT received (samples; +inf if none).
    [[nodiscard]] double minResultWeight() const { return m_minResultWeight; }
    // Seconds into the round when the last part left, or -1 while parts remain.
    [[nodiscard]] double sentAt() const { return m_sentAt; }
    // After the round: hands `pool` the DEALERs whose reducer returned every RESULT (so nothing
    // of this round is queued on them); the others close with this object.
    void keepConnections(DealerPool &pool);

  private:
    void connect(std::size_t j, int receiveQueue, zmq::context_t &context, DealerPool *pool);
    [[nodiscard]] DealerKey keyOf(std::size_t j, int receiveQueue) const;
    [[nodiscard]] std::unique_ptr<zmq::socket_t> open(const DealerKey &key, zmq::context_t &context) const;
    bool sendPart(std::size_t j);
    void keepReducersWaiting(int &budget);

    const RoundContext &m_round;
    std::vector<std::unique_ptr<zmq::socket_t>> m_dealers;     // per member; null: none
    std::vector<DealerKey> m_keys;                             // per member, what opened its DEALER
    std::vector<std::vector<Piece>> m_outgoing;                // per reducer, the parts of its shard
    std::vector<std::uint32_t> m_nextPart;                     // per reducer, the next part to send
    std::vector<std::uint64_t> m_expectedBack, m_receivedBack; // elements, per reducer
    std::vector<std::vector<bool>> m_resultSeen;               // per reducer and part
    std::vector<double> m_lastProgress; // per reducer, seconds into the round of its last RESULT or our last PART
    std::uint64_t m_skippedBack = 0;  // elements of shards whose reducer we would not connect to
    std::vector<float> m_resultPiece; // partElements floats, decoded RESULT
    double m_resultWeight = 0.0;
    double m_minResultWeight = std::numeric_limits<double>::infinity();
    double m_sentAt = -1.0;
    StaggerWindow m_window; // reducers fed at once
};

} // namespace dedloc::allreduce
