#pragma once
// A thread inside a network namespace of the tests (setns): sockets it opens live there, and keep
// their namespace when other threads use them. Root only; with no such namespace, or without the
// right to enter it, run() runs nothing and says so. Also addressOf(), the IPv4 socket address the
// tests bind and connect to. Header-only: the tests and the benchmarks' support use it.
#include <arpa/inet.h>
#include <condition_variable>
#include <cstdint>
#include <fcntl.h>
#include <functional>
#include <mutex>
#include <netinet/in.h>
#include <sched.h>
#include <string>
#include <thread>
#include <unistd.h>

namespace dedloc::test {

// A thread inside a network namespace (setns): sockets it opens live there. run() executes a
// function on it and waits.
class NetnsThread final {
public:
    explicit NetnsThread(const std::string &ns)
    {
        m_thread = std::thread([this, ns] {
            const int fd = ::open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
            const bool entered = fd >= 0 && ::setns(fd, CLONE_NEWNET) == 0;
            if (fd >= 0)
                ::close(fd);
            loop(entered);
        });
    }
    ~NetnsThread()
    {
        {
            std::lock_guard lock(m_mutex);
            m_quit = true;
        }
        m_cv.notify_all();
        m_thread.join();
    }
    NetnsThread(const NetnsThread &) = delete;
    NetnsThread &operator=(const NetnsThread &) = delete;

    // False when the thread could not enter the namespace (then nothing runs).
    bool run(std::function<void()> f)
    {
        std::unique_lock lock(m_mutex);
        m_task = std::move(f);
        m_done = false;
        m_cv.notify_all();
        m_cv.wait(lock, [this] { return m_done; });
        return m_entered;
    }

private:
    void loop(bool entered)
    {
        std::unique_lock lock(m_mutex);
        m_entered = entered;
        for (;;) {
            m_cv.wait(lock, [this] { return m_quit || m_task; });
            if (m_quit)
                return;
            auto task = std::move(m_task);
            m_task = nullptr;
            lock.unlock();
            if (m_entered)
                task();
            lock.lock();
            m_done = true;
            m_cv.notify_all();
        }
    }
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::function<void()> m_task;
    bool m_done = false, m_quit = false, m_entered = false;
    std::thread m_thread;
};

inline sockaddr_in addressOf(const std::string &host, std::uint16_t port)
{
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    return a;
}

} // namespace dedloc::test
