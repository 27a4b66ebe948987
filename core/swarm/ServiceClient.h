#pragma once
// The requesting side of a peer's service socket (swarm/PeerService.h): one DEALER connected
// to one peer, used by the matchmaker (join, then wait for begin/disband) and by state
// downloads (state?, part?). Works from client mode: it only connects out.
//
// Threads: one thread at a time. receive() waits at most `timeout` seconds.
// Errors: malformed replies are dropped with a logged reason (receive() keeps waiting).
#include "swarm/SwarmMessages.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dedloc {

struct ServiceReply {
    nlohmann::json header;          // checked by parseServiceMessage(); "t" is the type
    std::vector<std::uint8_t> data; // the optional second frame (state parts), at most maxDataBytes
};

class ServiceClient final {
public:
    explicit ServiceClient(const std::string &endpoint);
    ~ServiceClient();
    ServiceClient(const ServiceClient &) = delete;
    ServiceClient &operator=(const ServiceClient &) = delete;

    void send(const std::string &type, const nlohmann::json &fields);
    // The next well-formed reply, or nothing after `timeout` seconds. Replies whose data frame
    // exceeds `maxDataBytes` are dropped before they are copied.
    std::optional<ServiceReply> receive(double timeout, std::size_t maxDataBytes = 0);

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace dedloc
