#include "util/Error.h"

#include <cstring>

namespace dedloc {

Error::Error(const std::string &message) : std::runtime_error(message) {}

std::string systemErrorText(const std::string &what, int errnoValue)
{
    return what + ": " + std::strerror(errnoValue);
}

} // namespace dedloc
