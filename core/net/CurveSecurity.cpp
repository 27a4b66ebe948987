#include "net/CurveSecurity.h"

#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"
#include "util/Clock.h"

#include <sodium.h>
#include <zmq.hpp>

#include <chrono>
#include <future>
#include <pthread.h>
#include <vector>

namespace dedloc {

namespace {

constexpr const char *ZapEndpoint = "inproc://zeromq.zap.01";

void setKey(zmq::socket_t &socket, int option, const CurveKey &key)
{
    if (zmq_setsockopt(socket.handle(), option, key.data(), key.size()) != 0)
        throw Error(std::string("cannot set a CURVE key on a ZeroMQ socket: ") + zmq_strerror(zmq_errno()) +
                    " (is libzmq built with CURVE support?)");
}

void setInt(zmq::socket_t &socket, int option, int value)
{
    if (zmq_setsockopt(socket.handle(), option, &value, sizeof value) != 0)
        throw Error(std::string("cannot configure CURVE on a ZeroMQ socket: ") + zmq_strerror(zmq_errno()));
}


std::string frameText(const zmq_msg_t &m)
{
    return std::string(static_cast<const char *>(zmq_msg_data(const_cast<zmq_msg_t *>(&m))),
                       zmq_msg_size(const_cast<zmq_msg_t *>(&m)));
}

} // namespace

CurveKeyPair::~CurveKeyPair()
{
    sodium_memzero(secretKey.data(), secretKey.size());
}

CurveKeyPair curveKeyPairOf(const PeerIdentity &identity)
{
    if (sodium_init() < 0)
        throw Error("libsodium failed to initialise");
    CurveKeyPair pair;
    if (crypto_sign_ed25519_pk_to_curve25519(pair.publicKey.data(), identity.publicKey().data()) != 0 ||
        crypto_sign_ed25519_sk_to_curve25519(pair.secretKey.data(), identity.secretKey().data()) != 0)
        throw Error("the peer identity key cannot be converted to a Curve25519 key");
    return pair;
}

CurveKey curvePublicKeyOf(const Ed25519PublicKey &ed25519PublicKey)
{
    if (sodium_init() < 0)
        throw Error("libsodium failed to initialise");
    CurveKey out{};
    if (crypto_sign_ed25519_pk_to_curve25519(out.data(), ed25519PublicKey.data()) != 0)
        throw Error("peer key " + toHex(ed25519PublicKey.data(), 8) + "... is not a valid Ed25519 public key");
    return out;
}

void configureCurveServer(zmq::socket_t &socket, const CurveKeyPair &own)
{
    setInt(socket, ZMQ_CURVE_SERVER, 1);
    setKey(socket, ZMQ_CURVE_SECRETKEY, own.secretKey);
    if (zmq_setsockopt(socket.handle(), ZMQ_ZAP_DOMAIN, ZapDomain, std::char_traits<char>::length(ZapDomain)) != 0)
        throw Error(std::string("cannot set the ZAP domain: ") + zmq_strerror(zmq_errno()));
}

void configureCurveClient(zmq::socket_t &socket, const CurveKeyPair &own, const Ed25519PublicKey &serverIdentity)
{
    setKey(socket, ZMQ_CURVE_SERVERKEY, curvePublicKeyOf(serverIdentity));
    setKey(socket, ZMQ_CURVE_PUBLICKEY, own.publicKey);
    setKey(socket, ZMQ_CURVE_SECRETKEY, own.secretKey);
}

// --- registry ------------------------------------------------------------------------------

void AccessTokenRegistry::offer(const Ed25519PublicKey &presenter, std::string token)
{
    const auto key = curvePublicKeyOf(presenter);
    std::lock_guard lock(m_mutex);
    m_entries[key] = Entry{presenter, std::move(token)};
}

void AccessTokenRegistry::withdraw(const Ed25519PublicKey &presenter)
{
    const auto key = curvePublicKeyOf(presenter);
    std::lock_guard lock(m_mutex);
    m_entries.erase(key);
}

std::optional<AccessTokenRegistry::Entry> AccessTokenRegistry::find(const CurveKey &clientCurveKey) const
{
    std::lock_guard lock(m_mutex);
    const auto it = m_entries.find(clientCurveKey);
    if (it == m_entries.end())
        return std::nullopt;
    return it->second;
}

// --- ZAP handler ---------------------------------------------------------------------------

ZapHandler::ZapHandler(zmq::context_t &context, AccessPolicy policy,
                       std::shared_ptr<const AccessTokenRegistry> registry)
    : m_policy(std::move(policy)), m_registry(std::move(registry))
{
    if (!m_policy.now)
        m_policy.now = unixSeconds;
    if (m_policy.closed && !m_registry)
        throw Error("a closed run needs an access token registry for its ZAP handler");
    std::promise<std::string> bound;
    auto boundFuture = bound.get_future();
    void *ctx = context.handle();
    m_thread = std::thread([this, ctx, bound = std::move(bound)]() mutable {
        pthread_setname_np(pthread_self(), "dedloc-zap");
        void *socket = zmq_socket(ctx, ZMQ_REP);
        if (socket == nullptr) {
            bound.set_value(std::string("cannot create the ZAP socket: ") + zmq_strerror(zmq_errno()));
            return;
        }
        const int linger = 0;
        zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger);
        if (zmq_bind(socket, ZapEndpoint) != 0) {
            const std::string why = zmq_strerror(zmq_errno());
            zmq_close(socket);
            bound.set_value("cannot bind " + std::string(ZapEndpoint) +
                            " (another ZAP handler in this context?): " + why);
            return;
        }
        bound.set_value(std::string());
        loop(socket);
        zmq_close(socket);
    });
    const std::string failure = boundFuture.get();
    if (!failure.empty()) {
        m_thread.join();
        throw Error(failure);
    }
}

ZapHandler::~ZapHandler()
{
    m_stop = true;
    if (m_thread.joinable())
        m_thread.join();
}

std::string ZapHandler::lastRefusal() const
{
    std::lock_guard lock(m_mutex);
    return m_lastRefusal;
}

std::string judgeAccess(const AccessPolicy &policy, const AccessTokenRegistry *registry, const CurveKey &clientKey)
{
    if (!policy.closed)
        return {};
    const auto entry = registry ? registry->find(clientKey) : std::nullopt;
    if (!entry)
        return "no access token for client key " + toHex(clientKey.data(), 8) + "... (closed run)";
    try {
        const auto now = policy.now ? policy.now() : unixSeconds();
        const auto token = verifyAccessToken(entry->token, policy.lead, policy.runId, now, policy.skewSeconds);
        // Binding: the token's peer key must be the identity behind this Curve key.
        checkTokenBinding(token, entry->presenter);
        if (curvePublicKeyOf(token.peerKey) != clientKey)
            return "access token for " + token.name + " does not belong to client key " + toHex(clientKey.data(), 8);
    } catch (const Error &e) {
        return e.what();
    }
    return {};
}

std::string ZapHandler::judge(const CurveKey &clientKey) const
{
    return judgeAccess(m_policy, m_registry.get(), clientKey);
}

void ZapHandler::noteRefusal(const std::string &address, const std::string &reason)
{
    constexpr auto RefusalLogInterval = std::chrono::seconds(60);
    const auto now = std::chrono::steady_clock::now();
    if (m_noted.size() > 1000) // bounded: a scan of many addresses forgets the old ones
        std::erase_if(m_noted, [&](const auto &e) { return now - e.second.logged > RefusalLogInterval; });
    const auto key = address + '|' + reason;
    auto it = m_noted.find(key);
    if (it != m_noted.end() && now - it->second.logged < RefusalLogInterval) {
        ++it->second.suppressed;
        return;
    }
    const std::uint64_t suppressed = it == m_noted.end() ? 0 : it->second.suppressed;
    m_noted[key] = Noted{now, 0};
    log::warning("zap", "refused a data-plane connection from " + address + ": " + reason
                            + (suppressed ? " (" + std::to_string(suppressed) + " more since the last report)" : ""));
}

void ZapHandler::loop(void *socket)
{
    while (!m_stop.load()) {
        zmq_pollitem_t item{socket, 0, ZMQ_POLLIN, 0};
        const int n = zmq_poll(&item, 1, 100);
        if (n < 0) {
            if (zmq_errno() == ETERM)
                return;
            continue;
        }
        if (n == 0)
            continue;
        // Request: version, request id, domain, address, identity, mechanism, credentials...
        std::vector<std::string> frames;
        bool more = true;
        while (more) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, socket, 0) < 0) {
                zmq_msg_close(&m);
                if (zmq_errno() == ETERM)
                    return;
                break;
            }
            frames.push_back(frameText(m));
            more = zmq_msg_more(&m) != 0;
            zmq_msg_close(&m);
        }
        std::string status = "200", text = "OK", userId;
        if (frames.size() < 6 || frames[0] != "1.0") {
            status = "500";
            text = "malformed ZAP request";
        } else if (frames[2] != ZapDomain) {
            // Not one of our sockets: leave it alone.
        } else if (frames[5] != "CURVE" || frames.size() < 7 || frames[6].size() != 32) {
            status = "400";
            text = "the dedloc data plane requires CURVE";
        } else {
            CurveKey key{};
            std::copy(frames[6].begin(), frames[6].end(), key.begin());
            const auto reason = judge(key);
            if (!reason.empty()) {
                status = "400";
                text = reason;
            } else {
                userId = toHex(key.data(), key.size());
            }
        }
        if (status == "200") {
            ++m_accepted;
        } else {
            ++m_refused;
            {
                std::lock_guard lock(m_mutex);
                m_lastRefusal = text;
            }
            noteRefusal(frames.size() > 3 ? frames[3] : "?", text);
        }
        const std::string requestId = frames.size() > 1 ? frames[1] : std::string();
        const std::array<std::string, 6> reply = {"1.0", requestId, status, text.substr(0, 255), userId, ""};
        for (std::size_t i = 0; i < reply.size(); ++i)
            zmq_send(socket, reply[i].data(), reply[i].size(), i + 1 < reply.size() ? ZMQ_SNDMORE : 0);
    }
}

} // namespace dedloc
