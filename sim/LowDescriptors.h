#pragma once
// Low file descriptors kept free for OpenDHT (sim/SimSwarm.h). OpenDHT's receive loop waits with
// select(), which aborts the process on a descriptor of FD_SETSIZE (1024) or more; a simulator of
// many peers in one process opens thousands (ZeroMQ sockets, connections, threads' eventfds), so a
// peer that joins late would get a high one. This holds descriptors below that bound (on
// /dev/null). While a `Claim` lives on a thread, every socket() and pipe() that thread makes (a
// DHT node's sockets and stop pipe, made on the thread that starts the node) is moved onto a held
// descriptor (dup2 over it), whatever the peers' threads open meanwhile: freeing held descriptors
// for the node instead raced the sockets of a round starting on other threads.
// This file defines socket() and pipe() for the whole process (they call the C library's; only a
// thread holding a claim sees a difference): link it only into the simulator's programs.
// Threads: not thread-safe; one owner (the simulator's thread), which also holds the claims.
// Errors: none thrown; holding fewer than asked (the process's limit, or the low range used up)
// only means late nodes may land high.
#include <cstddef>
#include <vector>

namespace dedloc::sim {

class LowDescriptors final {
public:
    // Holds up to `count` descriptors below `below` (default FD_SETSIZE minus a margin for the
    // process's own). Also raises the soft RLIMIT_NOFILE to the hard one: many peers need more
    // than the usual 1024 descriptors in all.
    explicit LowDescriptors(std::size_t count, int below = 1000);
    ~LowDescriptors();
    LowDescriptors(const LowDescriptors &) = delete;
    LowDescriptors &operator=(const LowDescriptors &) = delete;

    // Takes again every descriptor below the bound that is free now (those of peers that left):
    // without it, the held range runs out after some joins, and later joiners' nodes land high.
    void refill();
    [[nodiscard]] std::size_t held() const { return m_held.size(); }

    // While it lives, the socket() and pipe() calls of the thread that made it land on held
    // descriptors (the lowest first; the call's own descriptor when none is left).
    class Claim final {
    public:
        explicit Claim(LowDescriptors &low);
        ~Claim();
        Claim(const Claim &) = delete;
        Claim &operator=(const Claim &) = delete;
        [[nodiscard]] std::size_t moved() const { return m_moved; }

    private:
        friend class LowDescriptors;
        LowDescriptors &m_low;
        Claim *m_outer;
        std::size_t m_moved = 0;
    };
    // The descriptor a call on this thread made, moved onto a held one where a Claim asks for it.
    static int claimed(int fd);

private:
    int m_below;
    int moveOnto(int fd);
    std::vector<int> m_held; // ascending
    // Opens /dev/null until a descriptor at or above the bound comes (closed again) or `count`
    // are held.
    void take(std::size_t count);
};

} // namespace dedloc::sim
