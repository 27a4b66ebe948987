#pragma once
// The endpoints a reachable peer advertises when others reach it at another address than the
// one it binds: a port forward on the volunteer's home router (`dedloc --announce`), or a port
// mapping obtained from the router. The peer binds its all-reduce ROUTER on port P and its
// service ROUTER on P + 1 (SwarmOptions); a forward maps an external HOST:Q to P and Q + 1 to
// P + 1, so the advertised pair is tcp://HOST:Q and tcp://HOST:Q+1.
//
// Pure string logic, no I/O; thread-safe.
#include <string>

namespace dedloc {

struct AnnouncedEndpoints {
    std::string allReduce; // "tcp://HOST:Q"
    std::string service;   // "tcp://HOST:Q+1"
};

// The parts of a ZeroMQ TCP endpoint "tcp://host:port" (also used by the dial-back check).
// endpointPort: the decimal port after the last ':' of `text` ("tcp://h:40001", "h:40001"), or
// -1 (none, not a number, "*"). endpointHost: "host" of "tcp://host:port", "" for anything else.
[[nodiscard]] long endpointPort(const std::string &text);
[[nodiscard]] std::string endpointHost(const std::string &endpoint);

// `announce`: "HOST" (the bound ports, forwarded unchanged) or "HOST:Q" (Q from 1 to 65534);
// HOST an IPv4 address or a DNS name, not 0.0.0.0 or "*". `boundAllReduce`, `boundService`:
// the ZeroMQ endpoints the sockets bound ("tcp://0.0.0.0:41000"), whose ports HOST alone keeps.
// Throws dedloc::Error naming what is wrong with `announce`.
[[nodiscard]] AnnouncedEndpoints announcedEndpoints(const std::string &announce, const std::string &boundAllReduce,
                                                    const std::string &boundService);

} // namespace dedloc
