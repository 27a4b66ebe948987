#include "monitor/StatusHttpServer.h"

#include "util/Error.h"
#include "util/Log.h"

#include <httplib.h>
#include <sys/socket.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

namespace dedloc {

struct StatusHttpServer::Impl {
    StatusHttpOptions options;
    httplib::Server server;
    std::thread listener;
    std::uint16_t port = 0;
    std::mutex mutex;
    std::map<std::string, std::shared_ptr<const std::string>> documents; // path -> JSON (null: not yet)
    std::atomic<std::uint64_t> requests{0};
    std::atomic<bool> listenerDone{false};

    std::shared_ptr<const std::string> document(const std::string &path, bool &known)
    {
        std::lock_guard lock(mutex);
        const auto it = documents.find(path);
        known = it != documents.end();
        return known ? it->second : nullptr;
    }

    static void error(httplib::Response &res, int status, const std::string &message)
    {
        res.status = status;
        res.set_content(nlohmann::json{{"error", message}}.dump(), "application/json");
    }

    httplib::Server::HandlerResponse handle(const httplib::Request &req, httplib::Response &res)
    {
        ++requests;
        res.set_header("Cache-Control", "no-store");
        std::size_t headerBytes = 0;
        for (const auto &[key, value] : req.headers)
            headerBytes += key.size() + value.size() + 4;
        if (headerBytes > options.maxHeaderBytes) {
            error(res, 431, "request headers too large");
            return httplib::Server::HandlerResponse::Handled;
        }
        // Read-only endpoints take no body: refuse it before anything reads it.
        if (req.has_header("Transfer-Encoding") ||
            (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0")) {
            error(res, 413, "request body not accepted");
            return httplib::Server::HandlerResponse::Handled;
        }
        bool known = false;
        const auto doc = document(req.path, known);
        if (!known) {
            error(res, 404, "not found");
            return httplib::Server::HandlerResponse::Handled;
        }
        if (req.method != "GET" && req.method != "HEAD") {
            res.set_header("Allow", "GET, HEAD");
            error(res, 405, "method not allowed");
            return httplib::Server::HandlerResponse::Handled;
        }
        if (!doc) {
            res.set_header("Retry-After", "1");
            error(res, 503, "not ready yet");
            return httplib::Server::HandlerResponse::Handled;
        }
        res.status = 200;
        res.set_content(*doc, "application/json");
        return httplib::Server::HandlerResponse::Handled;
    }
};

StatusHttpServer::StatusHttpServer(StatusHttpOptions options) : d(std::make_unique<Impl>())
{
    d->options = std::move(options);
    for (const auto &p : d->options.paths)
        d->documents[p] = nullptr;
    auto &s = d->server;
    const int threads = std::max(1, d->options.threads);
    // cpp-httplib owns the queue it gets from this factory (its API takes a raw pointer).
    s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    const auto seconds = static_cast<time_t>(std::floor(d->options.timeoutSeconds));
    const auto micros = static_cast<time_t>((d->options.timeoutSeconds - std::floor(d->options.timeoutSeconds)) * 1e6);
    s.set_read_timeout(seconds, micros);
    s.set_write_timeout(seconds, micros);
    s.set_keep_alive_max_count(1);
    s.set_payload_max_length(1024); // a backstop: handle() refuses every body first
    // cpp-httplib's default also sets SO_REUSEPORT, with which a second server binds the same
    // port and the two share its requests: a port in use must be an error instead.
    s.set_socket_options([](socket_t sock) {
        int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    s.set_pre_routing_handler(
        [this](const httplib::Request &req, httplib::Response &res) { return d->handle(req, res); });
    const int bound = d->options.port == 0 ? s.bind_to_any_port(d->options.host)
                                           : (s.bind_to_port(d->options.host, d->options.port) ? d->options.port : -1);
    if (bound <= 0)
        throw Error("cannot listen for HTTP on " + d->options.host + ":" + std::to_string(d->options.port) +
                    " (address in use or not on this machine); choose another --status-port or --status-host");
    d->port = static_cast<std::uint16_t>(bound);
    d->listener = std::thread([this] {
        if (!d->server.listen_after_bind())
            log::warning("http", "the status server stopped listening");
        d->listenerDone = true;
    });
}

StatusHttpServer::~StatusHttpServer()
{
    // cpp-httplib's stop() does nothing before the listener is running, and the listener would
    // then run forever: wait for it to start (it does at once) before stopping it.
    while (!d->server.is_running() && !d->listenerDone.load())
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    d->server.stop();
    if (d->listener.joinable())
        d->listener.join();
}

std::uint16_t StatusHttpServer::port() const
{
    return d->port;
}

void StatusHttpServer::publish(const std::string &path, std::string json)
{
    auto doc = std::make_shared<const std::string>(std::move(json));
    std::lock_guard lock(d->mutex);
    if (const auto it = d->documents.find(path); it != d->documents.end())
        it->second = std::move(doc);
}

std::uint64_t StatusHttpServer::requests() const
{
    return d->requests.load();
}

} // namespace dedloc
