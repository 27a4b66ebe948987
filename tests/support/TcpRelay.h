#pragma once
// A TCP relay for tests: accepts connections on 127.0.0.1:<listenPort> and forwards each, byte
// for byte both ways, to 127.0.0.1:<targetPort>, on its own thread. Stands in for a home
// router's port forward (a peer announces the relay's port, binds the target). Counts the bytes
// it forwarded, so a test can prove that peers used the announced address.
#include <atomic>
#include <cstdint>
#include <thread>

namespace dedloc::test {

class TcpRelay final {
  public:
    // Throws std::runtime_error if the listening socket cannot be bound.
    TcpRelay(std::uint16_t listenPort, std::uint16_t targetPort);
    ~TcpRelay(); // stops the thread and closes every connection
    TcpRelay(const TcpRelay &) = delete;
    TcpRelay &operator=(const TcpRelay &) = delete;

    [[nodiscard]] std::uint64_t bytesForwarded() const { return m_bytes.load(); }
    [[nodiscard]] int connectionsAccepted() const { return m_accepted.load(); }

  private:
    void loop();

    int m_listen = -1;
    std::uint16_t m_target;
    std::atomic<bool> m_stop{false};
    std::atomic<std::uint64_t> m_bytes{0};
    std::atomic<int> m_accepted{0};
    std::thread m_thread;
};

} // namespace dedloc::test
