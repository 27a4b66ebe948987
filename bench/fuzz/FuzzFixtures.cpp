#include "FuzzFixtures.h"

#include <sodium.h>

#include <algorithm>

namespace dedloc::fuzz {

const minisign::KeyPair &leadKey()
{
    static const minisign::KeyPair pair = [] {
        if (sodium_init() < 0)
            throw std::runtime_error("libsodium failed to initialise");
        std::array<unsigned char, crypto_sign_SEEDBYTES> seed{};
        std::fill(seed.begin(), seed.end(), 0x5a);
        minisign::KeyPair p;
        crypto_sign_seed_keypair(p.publicKey.key.data(), p.secretKey.key.data(), seed.data());
        p.publicKey.keyId = {1, 2, 3, 4, 5, 6, 7, 8};
        p.secretKey.keyId = p.publicKey.keyId;
        return p;
    }();
    return pair;
}

ShardSchema shardSchema()
{
    return ShardSchema{"fuzz-group", 4, 1000, 250, Compression::Fp16};
}

} // namespace dedloc::fuzz
