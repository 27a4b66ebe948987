#include "averaging/Reachability.h"

#include "averaging/ServiceClient.h"
#include "net/Announce.h"
#include "util/Clock.h"

#include <arpa/inet.h>

#include <future>
#include <thread>

namespace dedloc {

const char *reachabilityName(Reachability r)
{
    switch (r) {
    case Reachability::Reachable:
        return "reachable";
    case Reachability::Unreachable:
        return "unreachable";
    case Reachability::Unknown:
        return "unknown";
    }
    return "unknown";
}

std::string dialBackTarget(const std::string &advertised, const std::string &observedAddress)
{
    const long port = endpointPort(advertised);
    in_addr address{};
    if (endpointHost(advertised).empty() || port < 1 || inet_pton(AF_INET, observedAddress.c_str(), &address) != 1)
        return {};
    return "tcp://" + observedAddress + ":" + std::to_string(port);
}

bool dialBack(const std::string &endpoint, const std::array<unsigned char, 32> &serverKey,
              const std::shared_ptr<const DataPlaneSecurity> &security, double timeout, std::string *why)
{
    try {
        ServiceClient client(endpoint, security, serverKey);
        client.send("ping", nlohmann::json::object());
        const auto reply = client.receive(timeout);
        if (client.refusedByAuthentication())
            return true; // its ZAP handler answered: the connection reached it
        if (reply && reply->header.at("t").get<std::string>() == "pong")
            return true;
        if (why)
            *why = reply ? "it answered \"" + reply->header.at("t").get<std::string>() + "\" instead of pong"
                         : "no answer within " + std::to_string(static_cast<int>(timeout)) + " s";
    } catch (const std::exception &e) {
        if (why)
            *why = e.what();
    }
    return false;
}

namespace {

struct CheckerAnswer {
    std::string checker;
    bool answered = false, ok = false, sure = false;
    std::string why, at;
};

CheckerAnswer ask(const DonorAdvert &checker, const ReachRequest &self,
                  const std::shared_ptr<const DataPlaneSecurity> &security, double timeout,
                  const std::atomic<bool> &stop)
{
    CheckerAnswer a;
    a.checker = checker.peerId.substr(0, 8);
    try {
        ServiceClient client(checker.serviceEndpoint, security, checker.publicKey);
        client.send("reach?", reachRequestToJson(self));
        const auto reply = client.receive(timeout, 0, &stop);
        if (!reply || reply->header.at("t").get<std::string>() != "reach") {
            a.why = reply ? textOr(reply->header, "why", "refused") : "no answer";
            return a;
        }
        a.answered = true;
        a.ok = reply->header.value("ok", false) == true;
        a.sure = reply->header.value("sure", false) == true;
        a.why = textOr(reply->header, "why", "");
        a.at = textOr(reply->header, "at", "");
    } catch (const std::exception &e) {
        a.why = e.what();
    }
    return a;
}

} // namespace

ReachabilityVerdict checkReachability(const std::vector<DonorAdvert> &checkers, const ReachRequest &self,
                                      const std::shared_ptr<const DataPlaneSecurity> &security,
                                      const std::atomic<bool> &stop, ReachabilityOptions options)
{
    std::vector<std::future<CheckerAnswer>> pending;
    for (const auto &c : checkers) {
        if (pending.size() >= options.maxCheckers)
            break;
        if (c.peerId != self.peerId && !c.serviceEndpoint.empty())
            pending.push_back(std::async(std::launch::async, ask, c, self, security, options.timeout, std::cref(stop)));
    }
    ReachabilityVerdict v;
    v.checkersAsked = static_cast<int>(pending.size());
    if (pending.empty()) {
        v.why = "no reachable peer to check with yet";
        return v;
    }
    std::string lastNo, lastSilent;
    bool anySureNo = false;
    for (auto &f : pending) {
        const auto a = f.get();
        const std::string at = a.at.empty() ? self.serviceEndpoint : a.at;
        if (a.answered && a.ok) {
            v.reachability = Reachability::Reachable;
            v.why = "peer " + a.checker + " connected back to " + at;
            v.reachedAt = at;
        } else if (a.answered && a.sure) {
            anySureNo = true;
            lastNo = "peer " + a.checker + " could not connect to " + at + ": " + a.why;
        } else {
            lastSilent = "peer " + a.checker + ": " + a.why;
        }
    }
    if (v.reachability == Reachability::Reachable)
        return v;
    if (anySureNo) {
        v.reachability = Reachability::Unreachable;
        v.why = lastNo;
    } else {
        v.why = "no peer could say (" + lastSilent + ")";
    }
    return v;
}

} // namespace dedloc
