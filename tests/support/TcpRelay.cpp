#include "TcpRelay.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dedloc::test {

namespace {

sockaddr_in loopback(std::uint16_t port)
{
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

} // namespace

TcpRelay::TcpRelay(std::uint16_t listenPort, std::uint16_t targetPort) : m_target(targetPort)
{
    m_listen = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(m_listen, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    const auto a = loopback(listenPort);
    if (m_listen < 0 || ::bind(m_listen, reinterpret_cast<const sockaddr *>(&a), sizeof a) != 0 ||
        ::listen(m_listen, 16) != 0) {
        if (m_listen >= 0)
            ::close(m_listen);
        throw std::runtime_error("TcpRelay: cannot listen on 127.0.0.1:" + std::to_string(listenPort));
    }
    m_thread = std::thread([this] { loop(); });
}

TcpRelay::~TcpRelay()
{
    m_stop = true;
    if (m_thread.joinable())
        m_thread.join();
    ::close(m_listen);
}

void TcpRelay::loop()
{
    std::vector<std::pair<int, int>> links; // (accepted, outgoing)
    char buffer[64 * 1024];
    while (!m_stop.load()) {
        std::vector<pollfd> fds{{m_listen, POLLIN, 0}};
        for (const auto &[a, b] : links) {
            fds.push_back({a, POLLIN, 0});
            fds.push_back({b, POLLIN, 0});
        }
        if (::poll(fds.data(), fds.size(), 50) <= 0)
            continue;
        if (fds[0].revents & POLLIN) {
            const int in = ::accept(m_listen, nullptr, nullptr);
            const int out = ::socket(AF_INET, SOCK_STREAM, 0);
            const auto t = loopback(m_target);
            if (in >= 0 && out >= 0 && ::connect(out, reinterpret_cast<const sockaddr *>(&t), sizeof t) == 0) {
                links.emplace_back(in, out);
                ++m_accepted;
            } else {
                ::close(in);
                ::close(out);
            }
        }
        std::vector<std::pair<int, int>> alive;
        for (std::size_t i = 0; i < links.size(); ++i) {
            bool open = true;
            for (int side = 0; side < 2 && open; ++side) {
                if (!(fds[1 + 2 * i + side].revents & (POLLIN | POLLHUP | POLLERR)))
                    continue;
                const int from = side == 0 ? links[i].first : links[i].second;
                const int to = side == 0 ? links[i].second : links[i].first;
                const auto n = ::read(from, buffer, sizeof buffer);
                open = n > 0;
                for (ssize_t sent = 0; open && sent < n;) {
                    const auto w = ::write(to, buffer + sent, static_cast<std::size_t>(n - sent));
                    open = w > 0;
                    sent += open ? w : 0;
                }
                if (open)
                    m_bytes += static_cast<std::uint64_t>(n);
            }
            if (open) {
                alive.push_back(links[i]);
            } else {
                ::close(links[i].first);
                ::close(links[i].second);
            }
        }
        links.swap(alive);
    }
    for (const auto &[a, b] : links) {
        ::close(a);
        ::close(b);
    }
}

} // namespace dedloc::test
