#include "util/Hash.h"

#include "util/Error.h"

#include <sodium.h>

#include <cerrno>
#include <fstream>
#include <vector>

namespace dedloc {

static_assert(sizeof(crypto_hash_sha256_state) <= 128, "Sha256 state buffer too small");

namespace {
crypto_hash_sha256_state *asState(unsigned char *raw)
{
    return reinterpret_cast<crypto_hash_sha256_state *>(raw);
}
} // namespace

Sha256::Sha256()
{
    if (sodium_init() < 0)
        throw Error("libsodium failed to initialise");
    crypto_hash_sha256_init(asState(m_state));
}

void Sha256::update(const void *data, std::size_t bytes)
{
    crypto_hash_sha256_update(asState(m_state), static_cast<const unsigned char *>(data), bytes);
}

std::string Sha256::finalHex()
{
    unsigned char digest[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_final(asState(m_state), digest);
    return toHex(digest, sizeof digest);
}

std::string toHex(const unsigned char *data, std::size_t bytes)
{
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes * 2);
    for (std::size_t i = 0; i < bytes; ++i) {
        out.push_back(digits[data[i] >> 4]);
        out.push_back(digits[data[i] & 0xF]);
    }
    return out;
}

std::string sha256Hex(const void *data, std::size_t bytes)
{
    Sha256 h;
    h.update(data, bytes);
    return h.finalHex();
}

std::string sha256File(const std::filesystem::path &path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error(systemErrorText("cannot read " + path.string(), errno));
    Sha256 h;
    std::vector<char> buffer(1 << 20);
    while (in) {
        in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        h.update(buffer.data(), static_cast<std::size_t>(in.gcount()));
    }
    if (in.bad())
        throw Error("read error in " + path.string());
    return h.finalHex();
}

} // namespace dedloc
