#include "FakeDonor.h"

#include <zmq_addon.hpp>

#include <chrono>

namespace dedloc::test {

std::string serviceHeader(const std::string &type, const nlohmann::json &fields)
{
    const auto bytes = encodeServiceMessage(type, fields);
    return {bytes.begin(), bytes.end()};
}

FakeDonor::FakeDonor(zmq::context_t &context, Answer answer, double gap)
    : m_router(context, zmq::socket_type::router), m_answer(std::move(answer)), m_gap(gap)
{
    m_router.set(zmq::sockopt::linger, 0);
    m_router.bind("tcp://127.0.0.1:*");
    m_endpoint = m_router.get(zmq::sockopt::last_endpoint);
    m_thread = std::thread([this] { loop(); });
}

FakeDonor::~FakeDonor()
{
    m_stop = true;
    m_thread.join();
}

DonorAdvert FakeDonor::advert(const std::string &peerId, long epoch) const
{
    return {peerId, m_endpoint, epoch, {}};
}

int FakeDonor::requests(const std::string &type) const
{
    std::lock_guard lock(m_mutex);
    auto it = m_requests.find(type);
    return it == m_requests.end() ? 0 : it->second;
}

void FakeDonor::loop()
{
    while (!m_stop.load()) {
        zmq::pollitem_t item{m_router.handle(), 0, ZMQ_POLLIN, 0};
        zmq::poll(&item, 1, std::chrono::milliseconds(10));
        if (!(item.revents & ZMQ_POLLIN))
            continue;
        std::vector<zmq::message_t> frames;
        (void)zmq::recv_multipart(m_router, std::back_inserter(frames));
        const auto request = parseServiceMessage({frames.at(1).data<std::uint8_t>(), frames.at(1).size()});
        {
            std::lock_guard lock(m_mutex);
            ++m_requests[request.at("t").get<std::string>()];
        }
        const auto routingId = frames[0].to_string();
        for (const auto &reply : m_answer(request)) {
            for (const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(m_gap);
                 !m_stop.load() && std::chrono::steady_clock::now() < until;)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            if (m_stop.load())
                return;
            m_router.send(zmq::buffer(routingId), zmq::send_flags::sndmore);
            for (std::size_t i = 0; i < reply.size(); ++i)
                m_router.send(zmq::buffer(reply[i]), i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
        }
    }
}

FakeDonor::Answer donorOf(std::string state, std::function<std::vector<Frames>(std::uint64_t)> part)
{
    return [state = std::move(state), part = std::move(part)](const nlohmann::json &request) -> std::vector<Frames> {
        if (request.at("t") == "state?")
            return {{state}};
        return part(request.at("k").get<std::uint64_t>());
    };
}

} // namespace dedloc::test
