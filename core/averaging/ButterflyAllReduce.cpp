#include "averaging/ButterflyAllReduce.h"

#include "averaging/DealerPool.h"
#include "averaging/EarlyMessages.h"
#include "averaging/PartReducer.h"
#include "averaging/PartSender.h"
#include "averaging/RoundLayout.h"
#include "net/DataPlaneSecurity.h"
#include "net/TcpThroughput.h"
#include "util/Error.h"
#include "util/JsonReader.h"
#include "util/Log.h"

#include <nlohmann/json.hpp>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace dedloc {

namespace {

using Clock = std::chrono::steady_clock;
using allreduce::DealerPool;
using allreduce::EarlyMessages;
using allreduce::groupOf;
using allreduce::PartReducer;
using allreduce::RouterDrainer;
using allreduce::PartSender;
using allreduce::RoundContext;
using allreduce::layOutRound;

// Parts encoded per pass of the poll loop before it looks at the sockets.
constexpr int SendBudget = 32;
// Seconds a member whose own part of the round is done still waits for a sender that takes no
// more of its RESULTs (it stopped reading: frozen, or gone without closing). Results that
// could not be handed over by then are dropped; that sender keeps local values for them.
constexpr double ResultHandOffPatience = 2.0;
// Per member, the CURVE key its connections authenticate with.
std::vector<CurveKey> curveKeysOf(const std::vector<GroupMember> &members)
{
    std::vector<CurveKey> keys(members.size());
    for (std::size_t i = 0; i < members.size(); ++i) {
        try {
            keys[i] = curvePublicKeyOf(members[i].publicKey);
        } catch (const Error &) {
            // All zeros never matches a connection: that member's PARTs are refused.
        }
    }
    return keys;
}

// One round on this member: its sender and reducer sides, the messages of its group that came
// early, the poll loop over the ROUTER and the round's DEALERs, the offences and the report.
class RoundRunner final {
  public:
    // `routerPort`: the local port of the ROUTER (0: none), whose connections carry the RESULTs.
    RoundRunner(RoundContext round, zmq::context_t &context, zmq::socket_t *router, EarlyMessages &pending,
                DealerPool &pool, const AllReduceOptions &options, std::uint16_t routerPort);
    RoundRunner(const RoundRunner &) = delete;
    RoundRunner &operator=(const RoundRunner &) = delete;

    AllReduceReport run();

  private:
    std::optional<std::size_t> memberOfConnection(const zmq::message_t &frame) const;
    void offence(std::size_t member, const std::string &why);
    void dispatchRouterMessage(std::vector<zmq::message_t> &frames);
    void takeEarlyMessages();
    void watchSockets();
    void pollOnce(bool canSendMore);
    void receive(std::size_t owner);
    AllReduceReport finish();
    [[nodiscard]] std::vector<std::string> reducerEndpoints() const;
    void sampleUpload();
    [[nodiscard]] double measuredUpload();
    [[nodiscard]] double resultMargin() const
    {
        return std::max(0.0, m_options.reducerTimeout - m_options.senderTimeout);
    }

    RoundContext m_round; // before the sides, which keep a reference to it
    const AllReduceOptions &m_options;
    zmq::socket_t *m_router; // null in client mode
    EarlyMessages &m_pending;
    DealerPool &m_pool;
    bool m_downloadCapped;
    PartSender m_sender;
    PartReducer m_reducer;
    std::vector<zmq::pollitem_t> m_items;
    std::vector<std::size_t> m_owner; // per item: n = router, else dealer index
    AllReduceReport m_report;
    UploadMeter m_upload;        // PARTs on the DEALERs, RESULTs on the ROUTER's connections
    double m_uploadSampledAt = 0.0;
};

RoundRunner::RoundRunner(RoundContext round, zmq::context_t &context, zmq::socket_t *router, EarlyMessages &pending,
                         DealerPool &pool, const AllReduceOptions &options, std::uint16_t routerPort)
    : m_round(std::move(round)), m_options(options), m_router(router), m_pending(pending), m_pool(pool),
      m_downloadCapped(options.download && options.download->rate() > 0.0),
      // Results arrive on this round's own DEALERs: bounded queues there let TCP flow control slow
      // the reducers to the cap (8 messages per connection; 0 = unbounded). (The ROUTER's limit is
      // left alone: changing it while connections exist crashed libzmq 4.3.4's I/O thread.)
      m_sender(m_round, context, m_downloadCapped ? 8 : 0, options.keepConnections ? &pool : nullptr),
      m_reducer(m_round, router),
      m_upload(reducerEndpoints(), m_round.shard(m_round.me) > 0 ? routerPort : std::uint16_t(0))
{
}

// The reducers this member's DEALERs send to (m_sender is built by now).
std::vector<std::string> RoundRunner::reducerEndpoints() const
{
    std::vector<std::string> reducers;
    for (std::size_t j = 0; j < m_round.size(); ++j)
        if (m_sender.dealer(j))
            reducers.push_back(m_round.members[j].endpoint);
    return reducers;
}

AllReduceReport RoundRunner::run()
{
    if (m_reducer.alone()) // nobody sends to me: my shard is mine alone
        m_reducer.finishShard(false);
    takeEarlyMessages();
    watchSockets();
    bool shardDone = m_reducer.allPartsReduced();
    while (true) {
        // At the hard limit the shards are reduced over what arrived; the results of the others'
        // last parts still get the reducer timeout's margin over the sender timeout to come back.
        const double elapsed = m_round.elapsed();
        if (!shardDone) {
            // What already waits in the sockets is progress: read it before calling anyone silent
            // (the loop may have been busy sending results or under a cap for a while).
            if (!m_items.empty())
                pollOnce(true);
            m_reducer.excludeSilentSenders(m_options.senderTimeout);
            if (m_reducer.allPartsReduced() || elapsed >= m_options.roundTimeout) {
                m_reducer.finishShard(!m_reducer.allPartsReduced());
                shardDone = true;
            }
        }
        m_reducer.sendSomeResults();
        const bool handedOver = !m_reducer.resultsPending()
                                || elapsed - m_reducer.lastResultHandOff() > ResultHandOffPatience;
        if (shardDone && handedOver && (m_sender.resultsDone() || m_sender.resultsStalled(m_options.reducerTimeout)
                          || elapsed >= m_options.roundTimeout + resultMargin()))
            break;
        sampleUpload();
        const bool canSendMore = m_sender.sendSome(SendBudget);
        if (m_items.empty()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            continue;
        }
        pollOnce(canSendMore);
    }
    return finish();
}

// The member on whose CURVE connection `frame` arrived, if any.
std::optional<std::size_t> RoundRunner::memberOfConnection(const zmq::message_t &frame) const
{
    if (!m_round.security)
        return std::nullopt;
    const auto key = DataPlaneSecurity::senderKey(frame);
    if (!key)
        return std::nullopt;
    for (std::size_t i = 0; i < m_round.size(); ++i)
        if (i != m_round.me && m_round.curveKeys[i] == *key)
            return i;
    return std::nullopt;
}

// Rejected messages whose sender the link proves (the class comment of AllReduceEndpoint), by member.
void RoundRunner::offence(std::size_t member, const std::string &why)
{
    for (auto &o : m_report.offences)
        if (o.member == member) {
            ++o.messages;
            return;
        }
    m_report.offences.push_back({member, 1, why});
}

void RoundRunner::dispatchRouterMessage(std::vector<zmq::message_t> &frames)
{
    if (frames.size() < 2)
        return;
    // Route by group: another round's message waits for that round (bounded).
    const auto group = groupOf(frames);
    if (!group) {
        log::warning("allreduce", "dropped a malformed message (header is not a CBOR map with a group)");
        if (const auto who = memberOfConnection(frames[1]))
            offence(*who, "header is not a CBOR map with a group");
        return;
    }
    if (*group != m_round.groupId) {
        m_pending.add(*group, std::move(frames), m_downloadCapped);
        return;
    }
    if (m_round.shard(m_round.me) == 0) {
        log::warning("allreduce", "dropped a PART for a member without a shard");
        return;
    }
    try {
        m_reducer.handlePart(frames);
    } catch (const std::exception &e) {
        log::warning("allreduce", std::string("dropped a message: ") + e.what());
        if (const auto who = memberOfConnection(frames[1]))
            offence(*who, e.what());
    }
}

// Parts that arrived before this round started.
void RoundRunner::takeEarlyMessages()
{
    if (!m_router)
        return;
    // A round that never started here (this peer left that group, or a sender raced ahead
    // of a group that never formed) leaves its messages behind: they age out.
    // What the drainer read between rounds has not passed the download cap yet.
    for (auto &message : m_pending.take(m_round.groupId, m_round.start)) {
        if (m_downloadCapped && !message.paced)
            m_options.download->acquire(message.bytes);
        dispatchRouterMessage(message.frames);
    }
}

// The poll items: the ROUTER first (if any), then each DEALER in member order.
void RoundRunner::watchSockets()
{
    const std::size_t n = m_round.size();
    if (m_router) {
        m_items.push_back({m_router->handle(), 0, ZMQ_POLLIN, 0});
        m_owner.push_back(n);
    }
    for (std::size_t j = 0; j < n; ++j)
        if (auto *dealer = m_sender.dealer(j)) {
            m_items.push_back({dealer->handle(), 0, ZMQ_POLLIN, 0});
            m_owner.push_back(j);
        }
}

void RoundRunner::pollOnce(bool canSendMore)
{
    const std::size_t n = m_round.size();
    // Wake up for incoming messages, and for room on a DEALER whose reducer is fed now.
    for (std::size_t k = 0; k < m_items.size(); ++k)
        if (m_owner[k] != n)
            m_items[k].events = ZMQ_POLLIN | (m_sender.feeds(m_owner[k]) ? ZMQ_POLLOUT : 0);
    zmq::poll(m_items.data(), m_items.size(),
              std::chrono::milliseconds(canSendMore ? 0 : m_reducer.resultsPending() ? 1 : 20));
    for (std::size_t k = 0; k < m_items.size(); ++k) {
        if (!(m_items[k].revents & ZMQ_POLLIN)) // (POLLOUT: sendSome at the top of the loop)
            continue;
        receive(m_owner[k]);
    }
}

// Reads what waits on one socket (owner n: the ROUTER, else the DEALER to that reducer).
void RoundRunner::receive(std::size_t owner)
{
    const bool router = owner == m_round.size();
    auto &socket = router ? *m_router : *m_sender.dealer(owner);
    for (int drained = 0; drained < 256; ++drained) { // drain, but let the others in too
        std::vector<zmq::message_t> frames;
        if (!zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait))
            break;
        if (m_downloadCapped) {
            std::size_t bytes = 0;
            for (const auto &f : frames)
                bytes += f.size();
            m_options.download->acquire(bytes);
        }
        if (router) {
            dispatchRouterMessage(frames);
            continue;
        }
        try {
            m_sender.handleResult(owner, frames);
            m_reducer.heardFrom(owner); // alive, even while its parts go to others first
        } catch (const std::exception &e) {
            log::warning("allreduce", std::string("dropped a result: ") + e.what());
            offence(owner, e.what()); // it came on our connection to that reducer
        }
    }
}

AllReduceReport RoundRunner::finish()
{
    const auto &groupId = m_round.groupId;
    if (m_reducer.resultsPending())
        log::warning("allreduce", "group " + groupId + ": a sender took none of its last results for "
                                      + std::to_string(ResultHandOffPatience)
                                      + " s (it stopped reading): it keeps local values for them");
    log::debug("allreduce", "group " + groupId + ": parts sent " + std::to_string(m_sender.sentAt()) +
                                " s, shard reduced " + std::to_string(m_reducer.reducedAt()) + " s, results in " +
                                std::to_string(m_round.elapsed()) + " s");
    AllReduceReport &report = m_report;
    report.shardSizes = m_round.shardSizes;
    report.excludedSenders = m_reducer.excludedSenders();
    report.myShardWeight = m_reducer.shardWeight();
    report.groupWeight = std::max(m_reducer.shardWeight(), m_sender.resultWeight());
    report.minShardWeight = m_round.shardSizes[m_round.me] > 0
                                ? std::min(m_reducer.shardWeight(), m_sender.minResultWeight())
                                : m_sender.minResultWeight();
    report.complete = report.excludedSenders.empty();
    const std::uint64_t expected = m_sender.expectedElements(), received = m_sender.receivedElements();
    report.receivedFraction = expected ? static_cast<double>(received) / static_cast<double>(expected) : 1.0;
    if (received < expected) {
        report.complete = false;
        log::warning("allreduce", "group " + groupId + ": received " + std::to_string(received) + " of " +
                                      std::to_string(expected) + " averaged elements; the rest keep local values");
    }
    report.uploadBytesPerSecond = measuredUpload();
    report.roundTripSeconds = m_upload.roundTrip();
    if (m_options.keepConnections)
        m_sender.keepConnections(m_pool);
    if (m_round.security && m_options.reportOutliers) // the connection's key proved who sent the parts
        for (std::size_t i = 0; i < m_round.size(); ++i)
            if (m_reducer.judged()[i])
                report.clipVerdicts.push_back({i, m_reducer.outliers()[i]});
    return std::move(m_report);
}

// Every 100 ms: the members that got their results close their connections before the round
// ends here, and a closed connection's figures are gone.
void RoundRunner::sampleUpload()
{
    if (m_round.elapsed() - m_uploadSampledAt < 0.1)
        return;
    m_upload.sample();
    m_uploadSampledAt = m_round.elapsed();
}

// Read before the round's DEALERs close: their connections carry this member's parts.
double RoundRunner::measuredUpload()
{
    m_upload.sample();
    const double rate = m_upload.rate(), cap = m_round.upload ? m_round.upload->rate() : 0.0;
    if (cap <= 0)
        return rate;
    // Under a cap the link may idle between parts (busy too short to tell): the cap is the rate.
    return rate > 0 ? std::min(rate, cap) : (m_upload.bytes() >= 256 * 1024 ? cap : -1.0);
}

} // namespace

std::size_t defaultPartElements(Compression codec)
{
    const bool oneByte = codec == Compression::Uniform8Bit || codec == Compression::Blockwise8Bit;
    return oneByte ? 64 * 1024 : 16 * 1024;
}

struct AllReduceEndpoint::Impl {
    zmq::context_t context{1};
    std::shared_ptr<const DataPlaneSecurity> security;
    std::unique_ptr<ZapHandler> zap; // before the ROUTER binds; destroyed after it
    std::unique_ptr<zmq::socket_t> router;
    std::string endpoint;
    std::uint16_t boundPort = 0; // the ROUTER's local port (endpoint may be advertised elsewhere)
    EarlyMessages pending; // of rounds not started here yet
    DealerPool pool;       // DEALERs kept across rounds; closed before the context
    // Held by a round for its whole run, and by the drainer for one pass: the ROUTER and
    // `pending` are used by one thread at a time.
    mutable std::mutex roundMutex;
    std::unique_ptr<RouterDrainer> drainer; // stopped before the ROUTER and the pool close
};

AllReduceEndpoint::AllReduceEndpoint(bool reachable, const std::string &bindAddress,
                                     std::shared_ptr<const DataPlaneSecurity> security)
    : d(std::make_unique<Impl>())
{
    d->security = std::move(security);
    if (!reachable) {
        d->drainer = std::make_unique<RouterDrainer>(nullptr, d->roundMutex, d->pending, d->pool);
        return;
    }
    if (d->security)
        d->zap = d->security->startZap(d->context);
    d->router = std::make_unique<zmq::socket_t>(d->context, zmq::socket_type::router);
    // Every option before bind (changing a ROUTER's options with live connections crashed
    // libzmq 4.3.4's I/O thread).
    d->router->set(zmq::sockopt::linger, 0);
    d->router->set(zmq::sockopt::rcvhwm, 0);
    // RESULTs leave from a queue of their own (allreduce::PartReducer::sendSomeResults), one
    // sender at a time in the staggered schedule: a short queue per connection (4 parts, 128 KiB
    // of fp16: 0.1 s of a 10 Mbit/s uplink), and an error rather than a silent drop when it is
    // full. (Fixed for the endpoint's life: ROUTER options cannot change under live connections.)
    d->router->set(zmq::sockopt::sndhwm, 4);
    d->router->set(zmq::sockopt::router_mandatory, 1);
    d->router->set(zmq::sockopt::maxmsgsize, MaxDataPlaneFrameBytes);
    if (d->security)
        d->security->configureServer(*d->router);
    try {
        d->router->bind(bindAddress);
    } catch (const zmq::error_t &e) {
        throw Error("cannot listen on " + bindAddress + ": " + e.what());
    }
    d->endpoint = d->router->get(zmq::sockopt::last_endpoint);
    d->drainer = std::make_unique<RouterDrainer>(d->router.get(), d->roundMutex, d->pending, d->pool);
    try { // "tcp://host:port"; another transport has no port and its upload is not measured
        d->boundPort = static_cast<std::uint16_t>(std::stoi(d->endpoint.substr(d->endpoint.rfind(':') + 1)));
    } catch (const std::exception &) {
        d->boundPort = 0;
    }
}

AllReduceEndpoint::~AllReduceEndpoint()
{
    d->drainer.reset();
    d->pending.byGroup.clear();
    // A peer that leaves right after a round still delivers the results it queued for slower
    // members (closing with linger 0 would drop them: they would keep local values).
    if (d->router)
        d->router->set(zmq::sockopt::linger, 3000);
    d->router.reset(); // sockets before the ZAP handler and the context
    d->zap.reset();
}

std::string AllReduceEndpoint::endpoint() const
{
    return d->endpoint;
}

void AllReduceEndpoint::advertise(std::string endpoint)
{
    if (!d->endpoint.empty())
        d->endpoint = std::move(endpoint);
}

AllReduceReport AllReduceEndpoint::run(const std::string &groupId, const std::vector<GroupMember> &members,
                                       std::size_t me, std::span<float> values, const AllReduceOptions &options)
{
    std::lock_guard lock(d->roundMutex); // no drainer pass while the round reads the ROUTER
    RoundContext round = layOutRound(groupId, members, me, values, options);
    if (round.shard(me) > 0 && !d->router)
        throw Error("all-reduce: this member has a shard but no ROUTER (client mode)");
    const bool feedback = options.errorFeedback && ErrorFeedback::supports(options.codec) && round.myWeight > 0.0;
    round.start = Clock::now();
    round.security = d->security.get();
    if (d->security)
        round.curveKeys = curveKeysOf(members);
    if (options.tamperAverage)
        round.tamperAverage = &options.tamperAverage;
    if (options.tamperPart)
        round.tamperPart = &options.tamperPart;
    std::shared_ptr<RoundEvidence> evidence;
    if (options.checkResults) {
        evidence = std::make_shared<RoundEvidence>(me, round.shardSizes, round.partElements,
                                                   allreduce::blockPartsOf(round), options.codec, round.iSend());
        round.evidence = evidence.get();
    }
    RoundRunner runner(std::move(round), d->context, d->router.get(), d->pending, d->pool, options, d->boundPort);
    // What this member sends is the compressed form; the rest waits in the residual (once the
    // round is set up: a round that cannot start leaves the residual as it was). A sender of
    // weight 0 sends nothing, so its residual stays.
    if (feedback)
        options.errorFeedback->compress(options.codec, values);
    auto report = runner.run();
    report.evidence = std::move(evidence);
    return report;
}

AllReduceEndpoint::WaitingMessages AllReduceEndpoint::waiting() const
{
    std::lock_guard lock(d->roundMutex);
    return {d->pending.byGroup.size(), d->pending.bytes};
}

} // namespace dedloc
