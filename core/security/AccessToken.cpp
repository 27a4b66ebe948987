#include "security/AccessToken.h"

#include "util/Error.h"
#include "util/Hash.h"

#include <sodium.h>

#include <vector>

namespace dedloc {

namespace {

constexpr std::string_view Prefix = "dlt1.";
constexpr std::string_view Magic = "DLT1";
constexpr std::string_view Domain = "dedloc-access-token-v1\n";
constexpr std::size_t FixedBytes = 4 + 8 + 32 + 8 + 8;
constexpr std::size_t MaxField = 64;

void putI64(std::string &out, std::int64_t v)
{
    auto u = static_cast<std::uint64_t>(v);
    for (int i = 0; i < 8; ++i) {
        out.push_back(static_cast<char>(u & 0xff));
        u >>= 8;
    }
}

std::int64_t getI64(const unsigned char *p)
{
    std::uint64_t u = 0;
    for (int i = 7; i >= 0; --i)
        u = (u << 8) | p[i];
    return static_cast<std::int64_t>(u);
}

void checkField(const std::string &value, const char *what)
{
    if (value.empty() || value.size() > MaxField)
        throw Error(std::string("access token ") + what + " must be 1 to 64 bytes, got " +
                    std::to_string(value.size()));
}

std::string body(const AccessToken &t)
{
    std::string b(Magic);
    b.append(reinterpret_cast<const char *>(t.leadKeyId.data()), t.leadKeyId.size());
    b.append(reinterpret_cast<const char *>(t.peerKey.data()), t.peerKey.size());
    putI64(b, t.issuedAt);
    putI64(b, t.expiresAt);
    b.push_back(static_cast<char>(t.runId.size()));
    b += t.runId;
    b.push_back(static_cast<char>(t.name.size()));
    b += t.name;
    return b;
}

std::string signedMessage(const std::string &b)
{
    return std::string(Domain) + b;
}

// Decodes into (token, body bytes, signature).
AccessToken decode(std::string_view token, std::string &bodyOut, std::array<unsigned char, 64> &sig)
{
    if (sodium_init() < 0)
        throw Error("libsodium failed to initialise");
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' '))
        token.remove_suffix(1);
    if (token.substr(0, Prefix.size()) != Prefix)
        throw Error("not a dedloc access token (it must start with \"dlt1.\")");
    token.remove_prefix(Prefix.size());
    if (token.empty()) // nothing to decode (and libsodium must not get an empty buffer's null pointer)
        throw Error("access token is truncated (0 bytes)");
    std::vector<unsigned char> raw(token.size());
    std::size_t size = 0;
    const char *end = nullptr;
    if (sodium_base642bin(raw.data(), raw.size(), token.data(), token.size(), nullptr, &size, &end,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
        end != token.data() + token.size())
        throw Error("access token is not valid base64url");
    if (size < FixedBytes + 2 + 2 + 64)
        throw Error("access token is truncated (" + std::to_string(size) + " bytes)");
    const unsigned char *p = raw.data();
    if (std::string_view(reinterpret_cast<const char *>(p), 4) != Magic)
        throw Error("access token has an unknown version");
    AccessToken t;
    std::copy(p + 4, p + 12, t.leadKeyId.begin());
    std::copy(p + 12, p + 44, t.peerKey.begin());
    t.issuedAt = getI64(p + 44);
    t.expiresAt = getI64(p + 52);
    std::size_t at = FixedBytes;
    auto field = [&](std::string &out, const char *what) {
        const std::size_t n = p[at++];
        if (n == 0 || n > MaxField || at + n + 64 > size)
            throw Error(std::string("access token has a malformed ") + what);
        out.assign(reinterpret_cast<const char *>(p + at), n);
        at += n;
    };
    field(t.runId, "run id");
    field(t.name, "name");
    if (at + 64 != size)
        throw Error("access token has trailing bytes");
    bodyOut.assign(reinterpret_cast<const char *>(p), at);
    std::copy(p + at, p + at + 64, sig.begin());
    return t;
}

} // namespace

std::string issueAccessToken(const minisign::SecretKey &lead, const std::string &runId, const Ed25519PublicKey &peerKey,
                             const std::string &name, std::int64_t issuedAt, std::int64_t expiresAt)
{
    if (sodium_init() < 0)
        throw Error("libsodium failed to initialise");
    checkField(runId, "run id");
    checkField(name, "name");
    if (expiresAt <= issuedAt)
        throw Error("access token would expire before it is issued");
    AccessToken t;
    t.leadKeyId = lead.keyId;
    t.peerKey = peerKey;
    t.issuedAt = issuedAt;
    t.expiresAt = expiresAt;
    t.runId = runId;
    t.name = name;
    const std::string b = body(t);
    const std::string m = signedMessage(b);
    std::array<unsigned char, 64> sig{};
    crypto_sign_detached(sig.data(), nullptr, reinterpret_cast<const unsigned char *>(m.data()), m.size(), lead.key.data());
    std::string raw = b;
    raw.append(reinterpret_cast<const char *>(sig.data()), sig.size());
    std::string out(sodium_base64_ENCODED_LEN(raw.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
    sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char *>(raw.data()), raw.size(),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    out.resize(std::char_traits<char>::length(out.c_str()));
    return std::string(Prefix) + out;
}

AccessToken decodeAccessToken(std::string_view token)
{
    std::string b;
    std::array<unsigned char, 64> sig{};
    return decode(token, b, sig);
}

AccessToken verifyAccessToken(std::string_view token, const minisign::PublicKey &lead, const std::string &runId,
                              std::int64_t nowSeconds, std::int64_t skewSeconds)
{
    std::string b;
    std::array<unsigned char, 64> sig{};
    auto t = decode(token, b, sig);
    if (t.leadKeyId != lead.keyId)
        throw Error("access token for " + t.name + " was issued by another lead key");
    const std::string m = signedMessage(b);
    if (crypto_sign_verify_detached(sig.data(), reinterpret_cast<const unsigned char *>(m.data()), m.size(),
                                    lead.key.data()) != 0)
        throw Error("access token for " + t.name + " has an invalid signature (forged or altered)");
    if (t.runId != runId)
        throw Error("access token for " + t.name + " is for run " + t.runId + ", not " + runId);
    if (nowSeconds > t.expiresAt + skewSeconds)
        throw Error("access token for " + t.name + " expired " + std::to_string(nowSeconds - t.expiresAt) + " s ago");
    if (nowSeconds < t.issuedAt - skewSeconds)
        throw Error("access token for " + t.name + " is not valid yet (issued " +
                    std::to_string(t.issuedAt - nowSeconds) + " s in the future; check the clock)");
    return t;
}

void checkTokenBinding(const AccessToken &token, const Ed25519PublicKey &presentedKey)
{
    if (sodium_memcmp(token.peerKey.data(), presentedKey.data(), presentedKey.size()) != 0)
        throw Error("access token for " + token.name + " was issued to peer key " + toHex(token.peerKey.data(), 8) +
                    "..., not to the presenting peer " + toHex(presentedKey.data(), 8) + "...");
}

Ed25519PublicKey parsePeerKeyHex(const std::string &hex)
{
    Ed25519PublicKey key{};
    std::size_t size = 0;
    const char *end = nullptr;
    if (hex.size() != 64 || sodium_hex2bin(key.data(), key.size(), hex.data(), hex.size(), nullptr, &size, &end) != 0 ||
        size != key.size())
        throw Error("a peer key is 64 hex digits (an Ed25519 public key), got \"" + hex.substr(0, 80) + "\"");
    return key;
}

} // namespace dedloc
