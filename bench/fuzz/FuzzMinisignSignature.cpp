// A minisign signature file (security/Minisign.h), parsed and verified over a fixed content
// with the fixed lead key: what a volunteer does with a run's manifest.json.minisig.
#include "FuzzFixtures.h"
#include "FuzzTargets.h"

#include "security/Minisign.h"
#include "util/Error.h"

#include <string_view>

namespace dedloc::fuzz {

int fuzzMinisignSignature(const std::uint8_t *data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    try {
        (void)minisign::verify(leadKey().publicKey, SignedContent, text, "fuzz.minisig");
    } catch (const Error &) {
    }
    return 0;
}

} // namespace dedloc::fuzz
