#pragma once
// Butterfly all-reduce over ZeroMQ (DeDLOC section 3.2; docs/PROTOCOL.md "Butterfly all-reduce data plane").
//
// A group of n members averages one flat float vector. The vector is cut into one contiguous shard
// per member, sized from the shares the group's leader decided (GroupMember::share, through
// shardsFromShares(), so every member lays out the same shards) or, in a group without shares,
// by balanceShards() from the members' bandwidths (client-mode members reduce nothing). Every member with weight > 0 sends shard j, in parts of at
// most `partElements` elements, to member j; member j computes the weighted average
//     avg = sum_i w_i x_i / sum_i w_i          (w_i = samples member i accumulated)
// over the senders that arrived and sends it back to each of them. Members with weight 0
// (auxiliary peers) send nothing and receive nothing, but reduce their shard.
//
// Transport: a reachable member's AllReduceEndpoint binds one ROUTER; every sender connects a
// DEALER to each reducer and receives the results on that same connection, so client-mode
// members (behind NAT, no ROUTER) never accept a connection.
// Security (net/DataPlaneSecurity.h): with a DataPlaneSecurity every link is CurveZMQ: the ROUTER
// is a CURVE server behind this context's ZAP handler (closed runs: access tokens), each DEALER
// authenticates the reducer by GroupMember::publicKey, and a PART is accepted only on a
// connection whose client key is the key of the member its header names as sender.
//
// Sparse codecs (TopK4Bit): shard and part boundaries fall on the codec's blocks
// (codecAlignment), so a part's blocks are the whole vector's, and the reducers return averages
// in resultCodec() (SparseFp16: the union of the senders' kept elements).
// Determinism: a reducer sums senders in member order, and applies to its own shard the same
// encoded-then-decoded average it sends, so all members end with bitwise-identical values.
// Faults: every timeout counts from the last progress, not from the round's start (hivemind times
// each part), so a slow link that keeps delivering is waited for: a sender that misses parts and
// has delivered none for `senderTimeout` seconds (since the start or its last PART) is excluded
// from that shard and the weights are renormalised over those that arrived; the wait for results
// ends when every reducer still owing some has been silent for `reducerTimeout` (no RESULT from
// it and no PART sent to it), and the shards of those reducers keep the local values. At
// `roundTimeout` (from its start) every shard is reduced over what arrived, and the results still
// have reducerTimeout - senderTimeout to come back: a round never blocks longer than
// roundTimeout + max(0, reducerTimeout - senderTimeout) plus one poll interval and the upload
// cap's wait for the message being sent (a reduced part's RESULTs go out together).
// Malformed, foreign or wrong-schema messages are dropped with a logged reason. When the link
// tells who sent one (a PART on a CURVE connection whose client key is a member's; a RESULT on
// the DEALER this member opened to reducer j), the report names that member as an offender, so
// that the caller can strike it in its BanList (averaging/BanList.h). A late PART (its part was
// already reduced at the sender timeout) is a slow sender, not an offence.
//
// Between rounds: messages for rounds not started here (a faster member began earlier) are kept
// for them, at most 4096 messages and 64 MiB in all, none older than 120 s; the rest is dropped.
// An endpoint's own thread reads its ROUTER (if reachable) every 50 ms while no round runs, so
// that what anyone sends between rounds never waits, unbounded, in ZeroMQ's queue.
//
// Connections: a member keeps the DEALER it opened to a reducer after a round that returned it
// every RESULT, and the next round with that reducer sends on it (averaging/DealerPool.h: at
// most 64 idle, none idle over 120 s; what arrives on an idle one is read and dropped by the
// same thread). So a swarm of stable groups sets up its connections once.
//
// Threads: run() may be called from any thread, one round at a time (a second call waits for
// the first); the drainer thread never touches the sockets while a round runs. Errors:
// dedloc::Error for invalid arguments (empty group, index out of range).
#include "averaging/AveragedUpdate.h"
#include "averaging/RoundEvidence.h"
#include "averaging/SwarmMessages.h"
#include "compress/Compression.h"
#include "compress/ErrorFeedback.h"
#include "net/TokenBucket.h"
#include "run/RunManifest.h"

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dedloc {

class DataPlaneSecurity;

// Uplinks up to this rate (Mbit/s) send in the staggered schedule (averaging/PartSender.h), when
// their peers are closer than StaggerBelowRoundTrip. Measured (docs/BENCHMARKS.md, 50/10 links):
// without latency it took rounds at n = 8 from 1.44x their bound to 1.15-1.22x; on 100 Mbit/s links
// and on loopback its small queues left the link idle while the sender waited its turn for a core
// (1.6x against 1.4x at n = 8 on 100 Mbit/s).
inline constexpr double StaggerUpToMbit = 50.0;
// Round trips (seconds, to the farthest member of the last rounds) from which every peer is fed
// at once even on slow uplinks: with 20 ms or more added to the 50/10 links, sending to all at
// once took 1.11-1.25x the bound against 1.16-1.38x staggered (docs/BENCHMARKS.md, latency).
inline constexpr double StaggerBelowRoundTrip = 0.010;
// Whether a member whose uplink was measured at `uploadMbit` (<= 0: not known yet), with its
// peers `roundTripSeconds` away (0: not measured), staggers.
[[nodiscard]] inline bool staggerUplink(double uploadMbit, double roundTripSeconds = 0.0)
{
    return uploadMbit > 0.0 && uploadMbit <= StaggerUpToMbit && !(roundTripSeconds >= StaggerBelowRoundTrip);
}

// Elements per PART (and RESULT) of a round in `codec`: 16 Ki (64 KiB of fp32, 32 KiB of fp16),
// small so that the staggered schedule (averaging/PartSender.h) moves the uplink from one peer to
// the next within a few ms; 64 Ki for the one-byte codecs (uniform8bit, blockwise8bit), whose
// parts of 16 Ki elements were 16 KiB: uniform8bit's header (mean, scale, 256-entry codebook,
// 1 032 bytes) took 6.3% of each, 1.6% at 64 Ki. Every member of a group uses its run's codec,
// so they agree on the parts (the service protocol version says which sizes a peer uses).
[[nodiscard]] std::size_t defaultPartElements(Compression codec);

struct AllReduceOptions {
    Compression codec = Compression::None;
    // Elements per message; 0: defaultPartElements(codec).
    std::size_t partElements = 0;
    // The staggered schedule (averaging/PartSender.h) for this member's sending; false: every
    // peer at once, as hivemind does. Each member chooses for its own uplink (staggerUplink()).
    bool staggered = false;
    // This member's uplink (Mbit/s, as measured; 0: not known) and the longest round trip to its
    // peers (seconds, AllReduceReport::roundTripSeconds of earlier rounds; 0: not known): a
    // staggered sender's kernel send buffers hold 50 ms plus half the round trip of the uplink
    // (allreduce::sendBufferBytes).
    double uploadMbit = 0.0;
    double roundTripSeconds = 0.0;
    double senderTimeout = 15.0;           // seconds of silence of one sender (see above)
    double reducerTimeout = 30.0;          // seconds of silence of every reducer still owing results
    double roundTimeout = 900.0;           // seconds from the start of the round: the hard limit
    std::int64_t minShardElements = 0;
    // This member's weight in its PART headers. < 0: members[myIndex].weight. Lets a sender
    // whose weight was not known at matchmaking (the leader lists senders with weight 1) send
    // its real sample count, even 0 (a sender with nothing accumulated still takes part, so the
    // reducers do not wait for it until the sender timeout).
    double myWeight = -1.0;
    // The largest weight (samples) one sender may claim in its PART headers; 0: no bound. A PART
    // above it is refused as an offence, and so is a RESULT whose weight exceeds maxWeight times
    // the group's size: one member cannot decide an average by claiming a huge sample count, nor
    // make the weights infinite. The swarm passes twice the target batch size (an honest peer
    // never computes more in one epoch).
    double maxWeight = 0.0;
    // Per sender (peer id), the most weight (samples) its PARTs count for in this member's
    // reduction; a sender not listed counts up to `otherSendersWeightBound`. A heavier claim is
    // clipped to the bound, not refused: an honest sender's weight may run ahead of what its
    // progress records were counted for. The swarm passes what its tracker counted for each
    // sender at the round's epoch (ProgressTracker::weightBounds). Empty and infinity: only
    // maxWeight bounds.
    std::map<std::string, double> senderWeightBounds;
    double otherSendersWeightBound = std::numeric_limits<double>::infinity();
    // How this member's reducer combines the copies of each part (averaging/RobustAggregation.h):
    // the weighted mean, or CenteredClip, whose verdicts on the senders (far from the others or
    // not) the report carries in secured rounds, where the link proves who sent the parts.
    AggregationSpec aggregation;
    // Whether the report carries those verdicts. State rounds say no: an honest peer's parameters
    // may lie far from the others' (it stepped alone), and that is what the round repairs.
    bool reportOutliers = true;
    // Upload cap (the volunteer's setting): every PART and RESULT payload this member sends first takes
    // its size in tokens from this bucket (core/net/TokenBucket.h), sleeping when the bucket is
    // empty. nullptr: no cap. Shared by the rounds of a peer; must outlive run().
    TokenBucket *upload = nullptr;
    // Download cap: every PART and RESULT this member receives takes its size from this bucket
    // before the next is read. With a cap set, the DEALERs on which results arrive queue at most
    // 8 messages, so TCP flow control slows the reducers to the cap; PARTs arriving on the
    // ROUTER are paced as they are read (ZeroMQ may buffer them). nullptr or rate 0: no cap.
    TokenBucket *download = nullptr;
    // When set, every averaged piece this member applies (each RESULT it receives and each part
    // of its own shard it reduces) is appended here as encoded on the wire, so that the round's
    // average can be kept as an update others replay (averaging/AveragedUpdate.h). Filled on the
    // calling thread; must outlive run().
    std::vector<EncodedPiece> *capture = nullptr;
    // Error feedback (compress/ErrorFeedback.h) for a codec that supports it (TopK4Bit): when
    // set and this member sends values (weight > 0), `values` are first replaced by what the
    // codec sends of them plus the residual kept here, and the rest becomes the new residual;
    // the round then averages exactly those values. Ignored for other codecs. Must outlive run().
    ErrorFeedback *errorFeedback = nullptr;
    // Whether this round's DEALERs may come from, and go back to, the endpoint's kept connections
    // (see "Connections" above). false: opened for this round alone and closed after it (the
    // benchmark's comparison).
    bool keepConnections = true;
    // Whether this round's results are checked (averaging/ResultCheck.h): the reducers' RESULT
    // headers say each block's CenteredClip radius and the weight counted for their receiver, and
    // the report keeps what this member needs to sketch the round (AllReduceReport::evidence).
    // The swarm sets it for gradient rounds of runs that clip (open runs) with three or more senders.
    bool checkResults = false;
    // Tests only (the hostile peer of tests/): rewrites each block's average this member's
    // reducer computed, before it is encoded, applied and returned.
    std::function<void(std::span<float>)> tamperAverage;
    // Tests only: rewrites each PART this member sends with values, after encoding: the weight in
    // its header (samples) and its payload's bytes (a sender lying about its weight, or sending
    // values no honest encoder makes).
    std::function<void(double &, std::span<std::uint8_t>)> tamperPart;
};

// A member whose messages broke the protocol in this round (see above).
struct AllReduceOffence {
    std::size_t member = 0;  // index in the group
    int messages = 0;        // rejected messages it sent
    std::string reason;      // why the first one was rejected
};

// This member's CenteredClip verdict on one member whose parts its reducer weighed.
struct ClipVerdict {
    std::size_t member = 0; // index in the group
    bool outlier = false;   // some block of its parts lay far from the others' (SenderFit::outlier)
};

struct AllReduceReport {
    std::vector<std::int64_t> shardSizes;       // elements, per member
    std::vector<std::uint32_t> excludedSenders; // for this member's shard
    double myShardWeight = 0.0;                 // sum of weights averaged into this member's shard
    double groupWeight = 0.0;                   // largest shard weight seen (own or in RESULTs):
                                                // the samples of the global batch when complete
    // Smallest weight of any shard this member holds the average of (its own if it reduced one,
    // every RESULT): 0 means some shard averaged no sender at all (all of its senders excluded).
    double minShardWeight = 0.0;
    double receivedFraction = 1.0;              // of the elements this member expected back
    bool complete = true;                       // no exclusion here and every result received
    // This member's upload rate in the round, bytes/s, as the kernel measured it on the
    // connections carrying its PARTs (to the reducers) and its RESULTs (to the senders), sampled
    // every 100 ms (net/TcpThroughput.h UploadMeter), at most the upload cap; -1 when too little
    // was sent to tell (nothing to send, a small vector, or a fast link).
    double uploadBytesPerSecond = -1.0;
    // The longest of the least round trips the kernel measured on this round's connections
    // (seconds; UploadMeter::roundTrip): the path to the farthest member. 0: none measured.
    double roundTripSeconds = 0.0;
    std::vector<AllReduceOffence> offences;     // by member index, each member at most once
    // Verdicts on the senders this member's reducer weighed with CenteredClip (secured rounds with
    // reportOutliers), in member order. One outlier is no offence by itself: an honest small batch
    // lies far off now and then; the caller strikes persistent ones (averaging/OutlierRecord.h).
    std::vector<ClipVerdict> clipVerdicts;
    // What this member kept to sketch the round once its average's digest is known
    // (AllReduceOptions::checkResults; null otherwise).
    std::shared_ptr<const RoundEvidence> evidence;
};

class AllReduceEndpoint final {
public:
    // reachable: bind a ROUTER at `bindAddress` (port * = ephemeral). Not reachable: client mode.
    // `security` null: plaintext links (unit tests, the benchmark's --curve off); the swarm always
    // passes one. Throws dedloc::Error if the ROUTER cannot bind.
    explicit AllReduceEndpoint(bool reachable, const std::string &bindAddress = "tcp://127.0.0.1:*",
                               std::shared_ptr<const DataPlaneSecurity> security = nullptr);
    ~AllReduceEndpoint();
    AllReduceEndpoint(const AllReduceEndpoint &) = delete;
    AllReduceEndpoint &operator=(const AllReduceEndpoint &) = delete;

    // The endpoint other members connect to: the bound one, or the one given to advertise();
    // "" in client mode.
    [[nodiscard]] std::string endpoint() const;
    // Others reach this ROUTER at `endpoint` ("tcp://host:port": a router's port forward or a
    // mapped port), not at the bound address. Call before endpoint() is read by other threads.
    void advertise(std::string endpoint);

    // Messages kept for rounds not started here yet (count, bytes of all their frames); waits
    // for a running round to end (tests and diagnostics).
    struct WaitingMessages {
        std::size_t messages = 0;
        std::size_t bytes = 0;
    };
    [[nodiscard]] WaitingMessages waiting() const;

    // Averages `values` (every member passes a vector of the same length) in place.
    AllReduceReport run(const std::string &groupId, const std::vector<GroupMember> &members, std::size_t myIndex,
                        std::span<float> values, const AllReduceOptions &options);

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace dedloc
