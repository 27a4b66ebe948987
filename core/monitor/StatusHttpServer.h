#pragma once
// A read-only HTTP endpoint for dashboards: serves JSON documents that the owner publishes
// (publish(path, json)); it never calls into the swarm, so a slow or hostile client can at most
// delay other HTTP clients, never the monitor. Built on cpp-httplib (Debian libcpp-httplib-dev;
// docs/DECISIONS.md "dedloc-lead serve").
//
// Answers: GET or HEAD of a registered path -> 200 application/json (503 until its first
// publish); another method on it -> 405 with "Allow: GET, HEAD"; any other path -> 404; a
// request with a body (Content-Length > 0 or Transfer-Encoding) -> 413; headers over
// maxHeaderBytes in total -> 431; a request line over 8 KiB -> 414 and a malformed request
// -> 400 (cpp-httplib). Error bodies are JSON {"error": "..."}. One request per connection,
// read and write timeouts of `timeoutSeconds`, `threads` worker threads.
//
// Threads: the constructor binds (so a port in use is an error at once) and starts a listener
// thread; publish() may be called from any thread; the destructor stops and joins the server.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dedloc {

struct StatusHttpOptions {
    std::string host = "127.0.0.1"; // address to bind ("0.0.0.0": every interface)
    std::uint16_t port = 0;         // 0: ephemeral (see port())
    std::vector<std::string> paths; // served paths, e.g. {"/status", "/peers"}
    std::size_t maxHeaderBytes = std::size_t{16} * 1024;
    double timeoutSeconds = 2.0;
    int threads = 2;
};

class StatusHttpServer final {
  public:
    // Throws dedloc::Error when it cannot bind (address in use, no such address).
    explicit StatusHttpServer(StatusHttpOptions options);
    ~StatusHttpServer();
    StatusHttpServer(const StatusHttpServer &) = delete;
    StatusHttpServer &operator=(const StatusHttpServer &) = delete;

    [[nodiscard]] std::uint16_t port() const;
    // Replaces the document served at `path` (one of options.paths; others are ignored).
    void publish(const std::string &path, std::string json);
    // Requests answered so far (any status), for logs and tests.
    [[nodiscard]] std::uint64_t requests() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace dedloc
