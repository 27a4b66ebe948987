#pragma once
// Error type of the core. Every failure that a user can cause (bad manifest, missing corpus,
// corrupt checkpoint, full disk) is reported as a dedloc::Error whose what() is a complete,
// human-readable sentence naming the file or field at fault. Programming errors stay asserts.
#include <stdexcept>
#include <string>

namespace dedloc {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string &message);
};

// "what: strerror(errno)" for a failed system call; used at every I/O boundary.
[[nodiscard]] std::string systemErrorText(const std::string &what, int errnoValue);

} // namespace dedloc
