// A run manifest (run/RunManifest.h): the JSON a lead publishes and every volunteer loads.
#include "FuzzTargets.h"

#include "run/RunManifest.h"
#include "util/Error.h"

#include <string>

namespace dedloc::fuzz {

int fuzzRunManifest(const std::uint8_t *data, std::size_t size)
{
    try {
        const auto m = parseRunManifest(std::string(reinterpret_cast<const char *>(data), size), "/nonexistent");
        (void)parseRunManifest(toJson(m), "/nonexistent"); // what it accepts, it accepts again
    } catch (const Error &) {
        // A refused manifest.
    }
    return 0;
}

} // namespace dedloc::fuzz
