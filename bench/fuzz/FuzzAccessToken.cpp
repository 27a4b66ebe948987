// An access token of a closed run (security/AccessToken.h): decoded for display, and verified
// against the fixed lead key, run and clock.
#include "FuzzFixtures.h"
#include "FuzzTargets.h"

#include "security/AccessToken.h"
#include "util/Error.h"

#include <string_view>

namespace dedloc::fuzz {

int fuzzAccessToken(const std::uint8_t *data, std::size_t size)
{
    const std::string_view token(reinterpret_cast<const char *>(data), size);
    try {
        (void)decodeAccessToken(token);
    } catch (const Error &) {
    }
    try {
        const auto t = verifyAccessToken(token, leadKey().publicKey, RunId, static_cast<std::int64_t>(Now));
        checkTokenBinding(t, t.peerKey);
    } catch (const Error &) {
    }
    return 0;
}

} // namespace dedloc::fuzz
