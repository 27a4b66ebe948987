#include "net/DataPlaneSecurity.h"

#include "util/Error.h"
#include "util/Hash.h"
#include "util/Log.h"

#include <zmq.hpp>

#include <cstring>

namespace dedloc {

DataPlaneSecurity::DataPlaneSecurity(const PeerIdentity &identity, AccessPolicy policy)
    : m_own(curveKeyPairOf(identity)), m_publicKey(identity.publicKey()), m_policy(std::move(policy))
{
    if (m_policy.closed && m_policy.runId.empty())
        throw Error("a closed run needs its run id to check access tokens");
}

std::unique_ptr<ZapHandler> DataPlaneSecurity::startZap(zmq::context_t &context) const
{
    return std::make_unique<ZapHandler>(context, m_policy, m_registry);
}

void DataPlaneSecurity::configureServer(zmq::socket_t &socket) const
{
    configureCurveServer(socket, m_own);
}

void DataPlaneSecurity::configureClient(zmq::socket_t &socket, const Ed25519PublicKey &server) const
{
    configureCurveClient(socket, m_own, server);
}

std::string DataPlaneSecurity::admission(const Ed25519PublicKey &peer) const
{
    if (!m_policy.closed)
        return {};
    try {
        return judgeAccess(m_policy, m_registry.get(), curvePublicKeyOf(peer));
    } catch (const Error &e) {
        return e.what();
    }
}

bool DataPlaneSecurity::admitRecord(const Ed25519PublicKey &presenter, const std::string &token)
{
    if (!m_policy.closed)
        return true;
    std::string why;
    if (token.empty()) {
        why = "no access token";
    } else {
        try {
            // Checked here, not only at the handshake: a peer whose token does not verify must
            // not count toward the swarm's progress either (it would trigger steps it never joins).
            AccessTokenRegistry probe;
            probe.offer(presenter, token);
            why = judgeAccess(m_policy, &probe, curvePublicKeyOf(presenter));
        } catch (const Error &e) {
            why = e.what();
        }
    }
    const std::string peerId = PeerIdentity::peerIdOf(presenter);
    if (!why.empty()) {
        m_registry->withdraw(presenter);
        std::lock_guard lock(m_mutex);
        // Once per peer and token: the reason itself may change every second ("expired N s ago").
        if (m_noted.insert(peerId + "|" + token).second)
            log::warning("access", "peer " + peerId.substr(0, 8) + " is not admitted to this closed run: " + why);
        return false;
    }
    m_registry->offer(presenter, token);
    return true;
}

std::optional<CurveKey> DataPlaneSecurity::senderKey(const zmq::message_t &message)
{
    const char *userId = zmq_msg_gets(message.handle(), "User-Id");
    if (userId == nullptr || std::strlen(userId) != 64)
        return std::nullopt;
    CurveKey key{};
    for (std::size_t i = 0; i < key.size(); ++i) {
        unsigned value = 0;
        for (int k = 0; k < 2; ++k) {
            const char c = userId[2 * i + k];
            const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (digit < 0)
                return std::nullopt;
            value = value * 16 + static_cast<unsigned>(digit);
        }
        key[i] = static_cast<unsigned char>(value);
    }
    return key;
}

} // namespace dedloc
