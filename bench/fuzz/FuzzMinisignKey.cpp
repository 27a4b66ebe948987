// Minisign key files (security/Minisign.h): a public key (what a volunteer is given with a run)
// and a secret key read without a password (an encrypted one is refused before scrypt runs).
#include "FuzzTargets.h"

#include "security/Minisign.h"
#include "util/Error.h"

#include <string_view>

namespace dedloc::fuzz {

int fuzzMinisignKey(const std::uint8_t *data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    try {
        (void)minisign::parsePublicKey(text, "fuzz.pub");
    } catch (const Error &) {
    }
    try {
        (void)minisign::secretKeyIsEncrypted(text, "fuzz.key");
    } catch (const Error &) {
    }
    try {
        (void)minisign::parseSecretKey(text, std::nullopt, "fuzz.key");
    } catch (const Error &) {
    }
    return 0;
}

} // namespace dedloc::fuzz
