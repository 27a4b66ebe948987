#include "net/PeerIdentity.h"

#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Hash.h"

#include <sodium.h>
#include <sys/stat.h>

namespace dedloc {

namespace {
void initSodium()
{
    if (sodium_init() < 0)
        throw Error("libsodium failed to initialise");
}
} // namespace

std::string PeerIdentity::peerIdOf(const std::array<unsigned char, PublicKeyBytes> &publicKey)
{
    unsigned char digest[32];
    crypto_generichash(digest, sizeof digest, publicKey.data(), publicKey.size(), nullptr, 0);
    return toHex(digest, 16);
}

void PeerIdentity::derivePeerId() { m_peerId = peerIdOf(m_public); }

PeerIdentity PeerIdentity::generate()
{
    initSodium();
    PeerIdentity id;
    crypto_sign_keypair(id.m_public.data(), id.m_secret.data());
    id.derivePeerId();
    return id;
}

PeerIdentity PeerIdentity::loadOrCreate(const std::filesystem::path &keyFile)
{
    initSodium();
    if (std::filesystem::exists(keyFile)) {
        const std::string raw = readWholeFile(keyFile);
        if (raw.size() != SecretKeyBytes)
            throw Error("identity key " + keyFile.string() + " is malformed (" + std::to_string(raw.size())
                        + " bytes, expected " + std::to_string(SecretKeyBytes) + "); move it away to make a new identity");
        PeerIdentity id;
        std::copy(raw.begin(), raw.end(), id.m_secret.begin());
        crypto_sign_ed25519_sk_to_pk(id.m_public.data(), id.m_secret.data());
        id.derivePeerId();
        return id;
    }
    auto id = generate();
    std::error_code ec;
    std::filesystem::create_directories(keyFile.parent_path(), ec);
    const auto oldMask = ::umask(077);
    try {
        writeFileAtomically(keyFile, std::string(id.m_secret.begin(), id.m_secret.end()));
    } catch (...) {
        ::umask(oldMask);
        throw;
    }
    ::umask(oldMask);
    std::filesystem::permissions(keyFile, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write, ec);
    return id;
}

std::string PeerIdentity::sign(const std::string &message) const
{
    std::string signature(crypto_sign_BYTES, '\0');
    crypto_sign_detached(reinterpret_cast<unsigned char *>(signature.data()), nullptr,
                         reinterpret_cast<const unsigned char *>(message.data()), message.size(), m_secret.data());
    return signature;
}

bool PeerIdentity::verify(const std::array<unsigned char, PublicKeyBytes> &publicKey, const std::string &message,
                          const std::string &signature)
{
    initSodium();
    if (signature.size() != crypto_sign_BYTES)
        return false;
    return crypto_sign_verify_detached(reinterpret_cast<const unsigned char *>(signature.data()),
                                       reinterpret_cast<const unsigned char *>(message.data()), message.size(),
                                       publicKey.data()) == 0;
}

} // namespace dedloc
