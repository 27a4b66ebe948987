#pragma once
// A hand-made state donor for tests of state downloads (core/averaging/StateDownload.h,
// DonorDownload.h): a ZeroMQ ROUTER on its own thread that answers each service request with
// what a function of the request returns (a list of replies, each a list of frames; none:
// silence), and counts the requests by type. With `gap` > 0 it waits that many seconds before
// each reply (a donor that drips answers).
#include "averaging/SwarmMessages.h"

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dedloc::test {

using Frames = std::vector<std::string>;

// A service message header as one frame.
std::string serviceHeader(const std::string &type, const nlohmann::json &fields = nlohmann::json::object());

class FakeDonor {
  public:
    using Answer = std::function<std::vector<Frames>(const nlohmann::json &request)>;

    FakeDonor(zmq::context_t &context, Answer answer, double gap = 0.0);
    ~FakeDonor();
    FakeDonor(const FakeDonor &) = delete;
    FakeDonor &operator=(const FakeDonor &) = delete;

    [[nodiscard]] DonorAdvert advert(const std::string &peerId, long epoch = 5) const;
    [[nodiscard]] int requests(const std::string &type) const;

  private:
    void loop();

    zmq::socket_t m_router;
    Answer m_answer;
    double m_gap = 0.0;
    std::string m_endpoint;
    std::atomic<bool> m_stop{false};
    mutable std::mutex m_mutex;
    std::map<std::string, int> m_requests;
    std::thread m_thread;
};

// Answers "state?" with the frame `state` and every "part?" with `part(k)`.
FakeDonor::Answer donorOf(std::string state, std::function<std::vector<Frames>(std::uint64_t)> part);

} // namespace dedloc::test
