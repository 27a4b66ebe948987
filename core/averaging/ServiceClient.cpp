#include "averaging/ServiceClient.h"

#include "net/DataPlaneSecurity.h"
#include "util/Log.h"

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <atomic>
#include <chrono>
#include <cstring>

namespace dedloc {

namespace {

// One ZeroMQ context for every client of the process, never terminated (it outlives static
// destructors that may still close clients): a context per request cost an I/O thread and a
// handful of file descriptors each, for every join, state and update request.
zmq::context_t &clientContext()
{
    static auto *context = new zmq::context_t(1);
    return *context;
}

std::atomic<std::uint64_t> monitorCount{0};

} // namespace

struct ServiceClient::Impl {
    zmq::socket_t dealer{clientContext(), zmq::socket_type::dealer};
    std::unique_ptr<zmq::socket_t> monitor; // handshake failures (secured links only)
    bool refused = false;
    bool refusedAuth = false; // the refusal was ZAP's (the server's authentication answered)
    int dropped = 0;        // malformed replies dropped
    std::string dropReason; // why the last one was

    // Reads the monitor's pending events; true if one was a failed handshake.
    bool handshakeFailed()
    {
        bool failed = false;
        while (monitor) {
            zmq::message_t head, address;
            if (!monitor->recv(head, zmq::recv_flags::dontwait))
                break;
            (void)monitor->recv(address);
            std::uint16_t event = 0;
            if (head.size() >= 2)
                std::memcpy(&event, head.data(), 2);
            if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH || event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                || event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
                failed = true;
            refusedAuth = refusedAuth || event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
        }
        return failed;
    }
};

ServiceClient::ServiceClient(const std::string &endpoint, const std::shared_ptr<const DataPlaneSecurity> &security,
                             const std::array<unsigned char, 32> &serverKey)
    : d(std::make_unique<Impl>())
{
    d->dealer.set(zmq::sockopt::linger, 0);
    d->dealer.set(zmq::sockopt::maxmsgsize, MaxDataPlaneFrameBytes);
    // Replies beyond a few wait in the kernel's buffers, not in ZeroMQ's (a server sending
    // unasked frames of 16 MiB would otherwise fill a queue of 1 000 of them).
    d->dealer.set(zmq::sockopt::rcvhwm, 4);
    if (security) {
        security->configureClient(d->dealer, serverKey);
        // Unique within the shared context.
        std::string name = "inproc://service-client-monitor-"; // appended: GCC 12 warns falsely on "..." + ...
        name += std::to_string(monitorCount++);
        if (zmq_socket_monitor(d->dealer.handle(), name.c_str(),
                               ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                                   | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
            == 0) {
            d->monitor = std::make_unique<zmq::socket_t>(clientContext(), zmq::socket_type::pair);
            d->monitor->set(zmq::sockopt::linger, 0);
            d->monitor->connect(name);
        }
    }
    d->dealer.connect(endpoint);
}

ServiceClient::~ServiceClient()
{
    if (d->monitor) {
        zmq_socket_monitor(d->dealer.handle(), nullptr, 0);
        d->monitor->close();
    }
    d->dealer.close();
}

void ServiceClient::send(const std::string &type, const nlohmann::json &fields)
{
    const auto header = encodeServiceMessage(type, fields);
    d->dealer.send(zmq::message_t(header.data(), header.size()), zmq::send_flags::dontwait);
}

bool ServiceClient::refusedAtHandshake() const { return d->refused; }

bool ServiceClient::refusedByAuthentication() const { return d->refused && d->refusedAuth; }

int ServiceClient::droppedReplies() const { return d->dropped; }

const std::string &ServiceClient::lastDropReason() const { return d->dropReason; }

std::optional<ServiceReply> ServiceClient::receive(double timeout, std::size_t maxDataBytes, const std::atomic<bool> *stop)
{
    using Clock = std::chrono::steady_clock;
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
    while (true) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
        if (left.count() <= 0 || (stop && stop->load()))
            return std::nullopt;
        zmq::pollitem_t items[2] = {{d->dealer.handle(), 0, ZMQ_POLLIN, 0},
                                    {d->monitor ? d->monitor->handle() : nullptr, 0, ZMQ_POLLIN, 0}};
        zmq::poll(items, d->monitor ? 2 : 1, stop ? std::min(left, std::chrono::milliseconds(100)) : left);
        if (d->monitor && (items[1].revents & ZMQ_POLLIN) && d->handshakeFailed()) {
            d->refused = true;
            return std::nullopt;
        }
        if (!(items[0].revents & ZMQ_POLLIN))
            continue;
        std::vector<zmq::message_t> frames;
        if (!zmq::recv_multipart(d->dealer, std::back_inserter(frames), zmq::recv_flags::dontwait))
            continue;
        try {
            if (frames.empty() || frames.size() > 2)
                throw ProtocolError("reply has " + std::to_string(frames.size()) + " frames");
            if (frames.size() == 2 && frames[1].size() > maxDataBytes)
                throw ProtocolError("reply data of " + std::to_string(frames[1].size()) + " bytes exceeds "
                                    + std::to_string(maxDataBytes));
            ServiceReply r;
            r.header = parseServiceMessage({frames[0].data<std::uint8_t>(), frames[0].size()});
            if (frames.size() == 2)
                r.data.assign(frames[1].data<std::uint8_t>(), frames[1].data<std::uint8_t>() + frames[1].size());
            return r;
        } catch (const std::exception &e) {
            ++d->dropped;
            d->dropReason = e.what();
            log::warning("service", std::string("dropped a reply: ") + e.what());
        }
    }
}

} // namespace dedloc
