#include "swarm/ServiceClient.h"

#include "util/Log.h"

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <chrono>

namespace dedloc {

struct ServiceClient::Impl {
    zmq::context_t context{1};
    zmq::socket_t dealer{context, zmq::socket_type::dealer};
};

ServiceClient::ServiceClient(const std::string &endpoint) : d(std::make_unique<Impl>())
{
    d->dealer.set(zmq::sockopt::linger, 0);
    d->dealer.connect(endpoint);
}

ServiceClient::~ServiceClient() { d->dealer.close(); }

void ServiceClient::send(const std::string &type, const nlohmann::json &fields)
{
    const auto header = encodeServiceMessage(type, fields);
    d->dealer.send(zmq::message_t(header.data(), header.size()), zmq::send_flags::dontwait);
}

std::optional<ServiceReply> ServiceClient::receive(double timeout, std::size_t maxDataBytes)
{
    using Clock = std::chrono::steady_clock;
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
    while (true) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
        if (left.count() <= 0)
            return std::nullopt;
        zmq::pollitem_t item{d->dealer.handle(), 0, ZMQ_POLLIN, 0};
        zmq::poll(&item, 1, left);
        if (!(item.revents & ZMQ_POLLIN))
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
            log::warning("service", std::string("dropped a reply: ") + e.what());
        }
    }
}

} // namespace dedloc
