#pragma once
// This machine's own addresses, for checking a --host before anything binds it.
// Threads: any. Errors: returned as text, never thrown.
#include <string>

namespace dedloc {

// This machine's IPv4 addresses, "127.0.0.1, 192.168.1.11" (for a message); "none" or "unknown".
[[nodiscard]] std::string localAddresses();

// Empty when a UDP socket binds `host` (a numeric IPv4 address) with port 0, so that the DHT
// node and the data plane can bind it too; else what is wrong, naming this machine's addresses.
[[nodiscard]] std::string hostBindProblem(const std::string &host);

} // namespace dedloc
