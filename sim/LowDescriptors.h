#pragma once
// Low file descriptors kept free for OpenDHT (sim/SimSwarm.h). OpenDHT's receive loop waits with
// select(), which aborts the process on a descriptor of FD_SETSIZE (1024) or more; a simulator of
// many peers in one process opens thousands (ZeroMQ sockets, connections, threads' eventfds), so a
// peer that joins late would get a high one. This holds descriptors below that bound (on
// /dev/null) and frees some of them just before a DHT node is made: the kernel hands out the lowest
// free descriptor, so the node's sockets land there.
// Threads: not thread-safe; one owner (the simulator's thread). Errors: none thrown; holding fewer
// than asked (the process's limit, or the low range used up) only means late nodes may land high.
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

    // Frees `count` held descriptors, the lowest first (fewer if fewer are held).
    void release(std::size_t count);
    // Takes again every descriptor below the bound that is free now (those of peers that left):
    // without it, the held range runs out after some joins, and later joiners' nodes land high.
    void refill();
    [[nodiscard]] std::size_t held() const { return m_held.size(); }

    // Descriptors open in this process now (/proc/self/fd), -1 where it cannot be read.
    [[nodiscard]] static long openNow();

private:
    int m_below;
    std::vector<int> m_held; // ascending
    // Opens /dev/null until a descriptor at or above the bound comes (closed again) or `count`
    // are held.
    void take(std::size_t count);
};

} // namespace dedloc::sim
