#pragma once
// An emulated internet for tests and benchmarks (root only), made of network namespaces:
//   - a "public" switch (<prefix>-sw, a bridge) with public hosts on 10.<subnet>.0.0/24: the
//     lead's server and volunteers with public addresses;
//   - home routers (<prefix>-r<j>), each with a WAN address 10.<subnet>.0.<101 + j> on the
//     switch and a LAN 192.168.<j + 1>.0/24 behind it; the router masquerades (nftables NAT):
//     its volunteers connect out, nobody outside can connect in (no port forward);
//   - volunteers (<prefix>-v<k>) on a router's LAN, default route via the router.
// Every host's link is asymmetric as home links are: `tc tbf` limits its upload (the egress of
// its own end) and its download (the egress of the switch's or router's end). This kernel has no
// netem: latency, where a host asks for it (LinkRate::delayMs), comes from a DelayLine (user
// space, DelayLine.h) on the host's outgoing packets. Needs root, iproute2, nftables and the
// kernel's veth, bridge, tbf and NAT support (and /dev/net/tun for latency). The constructor removes leftovers of an interrupted run with the same prefix;
// the destructor removes everything. Not thread-safe. Throws std::runtime_error naming the
// failing command when something cannot be made.
//
// A router may run Debian's miniupnpd (package miniupnpd-nftables) on its LAN: a UPnP-IGD and
// NAT-PMP server that adds DNAT rules for the port mappings volunteers ask for (RouterOptions).
// miniupnpd 2.3.1 refuses to map when its external address is private ("port forwarding is
// impossible"), so a test with such a router gives the public switch a network outside the
// private ranges (`publicNet`, e.g. "25.7.0"): nothing leaves the namespaces. The daemon is a
// child process (killed with SIGKILL if the test process dies), stopped by the destructor; its
// files (/tmp/<prefix>-r<j>-miniupnpd.*) go with it; a daemon that does not start throws its log.
#include "DelayLine.h"

#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace dedloc::test {

struct LinkRate {
    double downMbit = 100.0;
    double upMbit = 100.0;
    // Milliseconds added to every packet the host sends off its own LAN (one way): the round trip
    // between two hosts with delays d1 and d2 is d1 + d2. 0: none.
    double delayMs = 0.0;
};

struct RouterOptions {
    bool miniupnpd = false; // serve UPnP-IGD and NAT-PMP on the LAN (needs a public `publicNet`)
};

class EmulatedInternet final {
public:
    // `publicNet`: the first three octets of the public switch's /24; empty: "10.<subnet>.0".
    explicit EmulatedInternet(std::string prefix, int subnet = 215, std::string publicNet = {});
    ~EmulatedInternet();
    EmulatedInternet(const EmulatedInternet &) = delete;
    EmulatedInternet &operator=(const EmulatedInternet &) = delete;

    // Each returns the new host's index for namespaceOf() and addressOf().
    int addPublicHost(LinkRate rate);
    int addRouter(RouterOptions options = {}); // a home router without port forwards
    int addVolunteer(int router, LinkRate rate);

    [[nodiscard]] const std::string &namespaceOf(int host) const { return m_hosts.at(host).ns; }
    [[nodiscard]] const std::string &addressOf(int host) const { return m_hosts.at(host).address; }
    // The public (WAN) address of a router: where its volunteers' connections come from.
    [[nodiscard]] const std::string &routerAddress(int router) const { return m_routers.at(router).address; }
    [[nodiscard]] const std::string &routerNamespace(int router) const { return m_routers.at(router).ns; }
    // The router's address on its LAN (its volunteers' gateway): 192.168.<router + 1>.1.
    [[nodiscard]] static std::string routerLanAddress(int router) { return "192.168." + std::to_string(router + 1) + ".1"; }

    // Whether this process may build it (root; ip, tc and nft present); `why` says what lacks.
    static bool available(std::string *why);
    // Removes every namespace whose name starts with "<prefix>-".
    static void removeAll(const std::string &prefix);
    // Whether routers can run miniupnpd (available(), and /usr/sbin/miniupnpd present).
    static bool miniupnpdAvailable(std::string *why);

private:
    struct Host {
        std::string ns, address;
    };
    struct Router {
        std::string ns, address;
        int volunteers = 0;
        pid_t miniupnpd = -1;
    };
    void startMiniupnpd(Router &r, int j);
    void stopDaemons() noexcept;
    void link(const std::string &ns, const std::string &sideNs, const std::string &sidePort, const std::string &bridge,
              LinkRate rate);

    std::string m_prefix;
    int m_subnet;
    std::string m_publicNet; // "10.<subnet>.0"
    std::vector<Host> m_hosts;
    std::vector<Router> m_routers;
    std::vector<std::unique_ptr<DelayLine>> m_delays;
    int m_public = 0;
};

} // namespace dedloc::test
