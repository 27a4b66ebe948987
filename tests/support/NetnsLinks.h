#pragma once
// Emulated home links for tests and benchmarks (root only): one network namespace per member,
// each linked by a veth pair to a bridge in a "switch" namespace; both ends of every veth are
// limited to `mbit` Mbit/s with `tc tbf` (the member's upload and download). Member r gets the
// address 10.<subnet>.0.<r + 1>/24 on its eth0. Needs root, iproute2 and the kernel's veth,
// bridge and tbf support; no netem (absent on this kernel), so no added delay.
//
// Namespaces are "<prefix>-sw" and "<prefix>-<r>"; the constructor first removes leftovers of an
// interrupted run with the same prefix, the destructor removes them all. Not thread-safe.
#include <string>

namespace dedloc::test {

class NetnsLinks final {
public:
    // Throws std::runtime_error (with the failing command) when a namespace or link cannot be made.
    NetnsLinks(std::string prefix, int members, double mbit, int subnet = 213);
    ~NetnsLinks();
    NetnsLinks(const NetnsLinks &) = delete;
    NetnsLinks &operator=(const NetnsLinks &) = delete;

    [[nodiscard]] std::string nameOf(int member) const { return m_prefix + "-" + std::to_string(member); }
    [[nodiscard]] std::string hostOf(int member) const
    {
        return "10." + std::to_string(m_subnet) + ".0." + std::to_string(member + 1);
    }

    // Whether this process may create namespaces (root and `ip` present); `why` says what lacks.
    static bool available(std::string *why);
    // The iproute2 `ip` program ("/usr/sbin/ip" or "/sbin/ip"), for `ip netns exec`.
    static std::string ipProgram();
    // Removes "<prefix>-sw" and "<prefix>-0".."<prefix>-63" if they exist.
    static void removeAll(const std::string &prefix);

private:
    std::string m_prefix;
    int m_subnet;
};

} // namespace dedloc::test
