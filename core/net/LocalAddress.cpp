#include "net/LocalAddress.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dedloc {

std::string localAddresses()
{
    ifaddrs *list = nullptr;
    if (::getifaddrs(&list) != 0)
        return "unknown";
    std::string text;
    for (const ifaddrs *i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
            continue;
        char name[INET_ADDRSTRLEN] = {};
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in *>(i->ifa_addr)->sin_addr, name, sizeof name);
        text += (text.empty() ? "" : ", ") + std::string(name);
    }
    ::freeifaddrs(list);
    return text.empty() ? "none" : text;
}

std::string hostBindProblem(const std::string &host)
{
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICHOST; // ZeroMQ binds numeric addresses only
    addrinfo *found = nullptr;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || !found)
        return "--host " + host + " is not a numeric IPv4 address; this machine has " + localAddresses();
    sockaddr_in address{};
    std::memcpy(&address, found->ai_addr, sizeof address);
    ::freeaddrinfo(found);
    address.sin_port = 0;
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return {}; // no socket to try with: the peer's own binds will tell
    const int rc = ::bind(fd, reinterpret_cast<const sockaddr *>(&address), sizeof address);
    const int error = errno;
    ::close(fd);
    if (rc == 0)
        return {};
    const std::string why = error == EADDRNOTAVAIL ? std::string("is not an address of this machine")
                                                   : "cannot be bound: " + std::string(std::strerror(error));
    return "--host " + host + " " + why + "; this machine has " + localAddresses() + " (or 0.0.0.0 with --client-mode)";
}

} // namespace dedloc
