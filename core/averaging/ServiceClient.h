#pragma once
// The requesting side of a peer's service socket (averaging/PeerService.h): one DEALER connected
// to one peer, used by the matchmaker (join, then wait for begin/disband) and by state
// downloads (state?, part?). Works from client mode: it only connects out.
//
// Security: with a DataPlaneSecurity the DEALER is a CURVE client that authenticates the peer by
// `serverKey` (its Ed25519 identity key, from the signed DHT record that named the endpoint). A
// handshake the server refuses (ZAP: closed run, no valid access token) ends receive() at once,
// and refusedAtHandshake() says so, rather than waiting out the timeout in silence.
//
// Threads: one thread at a time (`stop` may be set from any). receive() waits at most `timeout`
// seconds.
// Errors: malformed replies are dropped with a logged reason (receive() keeps waiting);
// dedloc::Error from the constructor if `serverKey` is not a valid key.
#include "averaging/SwarmMessages.h"

#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dedloc {

class DataPlaneSecurity;

struct ServiceReply {
    nlohmann::json header;          // checked by parseServiceMessage(); "t" is the type
    std::vector<std::uint8_t> data; // the optional second frame (state parts), at most maxDataBytes
};

class ServiceClient final {
public:
    // `security` null: plaintext (unit tests only).
    explicit ServiceClient(const std::string &endpoint, const std::shared_ptr<const DataPlaneSecurity> &security = nullptr,
                           const std::array<unsigned char, 32> &serverKey = {});
    ~ServiceClient();
    ServiceClient(const ServiceClient &) = delete;
    ServiceClient &operator=(const ServiceClient &) = delete;

    void send(const std::string &type, const nlohmann::json &fields);
    // The next well-formed reply, or nothing after `timeout` seconds, as soon as the server
    // refuses the handshake, or within 100 ms of `*stop` becoming true. Replies whose data frame
    // exceeds `maxDataBytes` are dropped before they are copied.
    std::optional<ServiceReply> receive(double timeout, std::size_t maxDataBytes = 0,
                                        const std::atomic<bool> *stop = nullptr);

    // Replies dropped as malformed (frames, size, CBOR, fields) since construction, and why the
    // last one was: a caller that got nothing can tell a silent peer from one that sent garbage.
    [[nodiscard]] int droppedReplies() const;
    [[nodiscard]] const std::string &lastDropReason() const;

    // The server refused our CURVE handshake (ZAP status, e.g. 400: closed run, token refused).
    [[nodiscard]] bool refusedAtHandshake() const;
    // Refused by the server's authentication (ZAP answered: a CURVE server of the expected key
    // is there); a connection dropped for another reason (not ZeroMQ, wrong key) is not this.
    [[nodiscard]] bool refusedByAuthentication() const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace dedloc
