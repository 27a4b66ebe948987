#include "HttpProbe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>

namespace dedloc::test {

HttpReply httpExchange(unsigned short port, const std::string &request, double timeout)
{
    HttpReply reply;
    const auto start = std::chrono::steady_clock::now();
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return reply;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    std::string raw;
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0) {
        std::size_t sent = 0;
        while (sent < request.size()) {
            const auto n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
            if (n <= 0)
                break; // the server may refuse before reading everything: read what it said
            sent += static_cast<std::size_t>(n);
        }
        const auto deadline = start + std::chrono::duration<double>(timeout);
        char buf[4096];
        while (std::chrono::steady_clock::now() < deadline) {
            pollfd p{fd, POLLIN, 0};
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (::poll(&p, 1, static_cast<int>(std::max<long>(1, left.count()))) <= 0)
                break;
            const auto n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0)
                break;
            raw.append(buf, static_cast<std::size_t>(n));
        }
    }
    ::close(fd);
    reply.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto headerEnd = raw.find("\r\n\r\n");
    if (raw.rfind("HTTP/1.", 0) != 0 || headerEnd == std::string::npos)
        return reply;
    reply.status = std::atoi(raw.c_str() + raw.find(' ') + 1);
    std::size_t pos = raw.find("\r\n") + 2;
    while (pos < headerEnd) {
        const auto end = raw.find("\r\n", pos);
        const auto line = raw.substr(pos, end - pos);
        const auto colon = line.find(':');
        if (colon != std::string::npos) {
            auto name = line.substr(0, colon);
            std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
            auto value = line.substr(colon + 1);
            value.erase(0, value.find_first_not_of(' '));
            reply.headers[name] = value;
        }
        pos = end + 2;
    }
    reply.body = raw.substr(headerEnd + 4);
    return reply;
}

HttpReply httpGet(unsigned short port, const std::string &path, double timeout)
{
    return httpExchange(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", timeout);
}

} // namespace dedloc::test
