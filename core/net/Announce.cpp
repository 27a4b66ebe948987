#include "net/Announce.h"

#include "util/Error.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace dedloc {

long endpointPort(const std::string &text)
{
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon + 1 == text.size() || text.size() - colon > 6)
        return -1;
    const std::string digits = text.substr(colon + 1);
    if (!std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
        return -1;
    return std::stol(digits);
}

std::string endpointHost(const std::string &endpoint)
{
    const std::string scheme = "tcp://";
    const auto colon = endpoint.rfind(':');
    if (endpoint.rfind(scheme, 0) != 0 || colon == std::string::npos || colon < scheme.size())
        return {};
    return endpoint.substr(scheme.size(), colon - scheme.size());
}

namespace {

bool validHost(const std::string &host)
{
    if (host.empty() || host.size() > 253 || host == "0.0.0.0" || host == "*")
        return false;
    if (!std::all_of(host.begin(), host.end(), [](unsigned char c) { return std::isalnum(c) || c == '.' || c == '-'; }))
        return false;
    // Digits and dots only: an IPv4 address or nothing ("40000" is a port given without a host).
    in_addr address{};
    const bool numeric =
        std::all_of(host.begin(), host.end(), [](unsigned char c) { return std::isdigit(c) || c == '.'; });
    return !numeric || inet_pton(AF_INET, host.c_str(), &address) == 1;
}

} // namespace

AnnouncedEndpoints announcedEndpoints(const std::string &announce, const std::string &boundAllReduce,
                                      const std::string &boundService)
{
    const auto colon = announce.rfind(':');
    const std::string host = colon == std::string::npos ? announce : announce.substr(0, colon);
    if (!validHost(host))
        throw Error("--announce " + announce +
                    ": give the address others reach this machine at (an IPv4 "
                    "address or a host name, e.g. your router's public address), optionally with :PORT");
    long allReducePort = endpointPort(boundAllReduce), servicePort = endpointPort(boundService);
    if (colon != std::string::npos) {
        allReducePort = endpointPort(announce);
        if (allReducePort < 1 || allReducePort > 65534)
            throw Error("--announce " + announce +
                        ": the port must be a number from 1 to 65534 (the service "
                        "socket is forwarded from the port after it)");
        servicePort = allReducePort + 1;
    }
    if (allReducePort < 1 || servicePort < 1)
        throw Error("--announce " + announce + ": the bound sockets have no port to keep (" + boundAllReduce + ", " +
                    boundService + ")");
    return {"tcp://" + host + ":" + std::to_string(allReducePort), "tcp://" + host + ":" + std::to_string(servicePort)};
}

} // namespace dedloc
