#pragma once
// A peer's long-term identity: an Ed25519 key pair (libsodium crypto_sign), kept in
// <data dir>/identity.key (mode 0600) so a peer keeps its id across restarts.
// Peer id = the first 16 bytes of BLAKE2b-256(public key), as 32 hex digits: short enough for
// logs and DHT keys, long enough that collisions need 2^64 work.
#include <array>
#include <filesystem>
#include <string>

namespace dedloc {

class PeerIdentity final {
public:
    static constexpr std::size_t PublicKeyBytes = 32;
    static constexpr std::size_t SecretKeyBytes = 64;

    // Loads the key file, or creates it (and its directory) if it does not exist. Throws
    // dedloc::Error if the file exists but is malformed (it is never overwritten silently).
    static PeerIdentity loadOrCreate(const std::filesystem::path &keyFile);
    static PeerIdentity generate();

    [[nodiscard]] const std::string &peerId() const { return m_peerId; }
    [[nodiscard]] const std::array<unsigned char, PublicKeyBytes> &publicKey() const { return m_public; }
    // The Ed25519 secret key (seed | public key, 64 bytes). Only for deriving the CurveZMQ key
    // pair (net/CurveSecurity.h); never logged, sent or written elsewhere.
    [[nodiscard]] const std::array<unsigned char, SecretKeyBytes> &secretKey() const { return m_secret; }
    // Detached Ed25519 signature (64 bytes) of `message`.
    [[nodiscard]] std::string sign(const std::string &message) const;
    // The peer id that belongs to a public key (see above).
    [[nodiscard]] static std::string peerIdOf(const std::array<unsigned char, PublicKeyBytes> &publicKey);
    [[nodiscard]] static bool verify(const std::array<unsigned char, PublicKeyBytes> &publicKey,
                                     const std::string &message, const std::string &signature);

private:
    PeerIdentity() = default;
    void derivePeerId();

    std::array<unsigned char, PublicKeyBytes> m_public{};
    std::array<unsigned char, SecretKeyBytes> m_secret{};
    std::string m_peerId;
};

} // namespace dedloc
