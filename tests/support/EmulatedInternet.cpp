#include "EmulatedInternet.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>

namespace dedloc::test {

namespace {

bool run(const std::string &command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

void must(const std::string &command)
{
    if (!run(command))
        throw std::runtime_error("emulated internet: \"" + command + "\" failed");
}

std::string tbf(double mbit)
{
    // At least one MTU per burst; kbit granularity so that 2 Mbit/s and below stay exact.
    return " root tbf rate " + std::to_string(static_cast<long>(mbit * 1000)) + "kbit burst 32kb latency 100ms";
}

bool programExists(const char *name)
{
    for (const char *dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"})
        if (std::filesystem::exists(std::string(dir) + name))
            return true;
    return false;
}

} // namespace

bool EmulatedInternet::available(std::string *why)
{
    const char *lacks = ::geteuid() != 0      ? "needs root (network namespaces, tc, nftables)"
                        : !programExists("ip")  ? "needs iproute2 (ip)"
                        : !programExists("tc")  ? "needs iproute2 (tc)"
                        : !programExists("nft") ? "needs nftables (nft) for the routers' NAT"
                                                : nullptr;
    if (lacks && why)
        *why = lacks;
    return lacks == nullptr;
}

void EmulatedInternet::removeAll(const std::string &prefix)
{
    std::error_code ec;
    if (!std::filesystem::is_directory("/run/netns", ec))
        return;
    for (const auto &e : std::filesystem::directory_iterator("/run/netns", ec)) {
        const auto name = e.path().filename().string();
        if (name.rfind(prefix + "-", 0) == 0)
            run("ip netns del " + name);
    }
}

EmulatedInternet::EmulatedInternet(std::string prefix, int subnet) : m_prefix(std::move(prefix)), m_subnet(subnet)
{
    removeAll(m_prefix);
    const std::string sw = m_prefix + "-sw";
    must("ip netns add " + sw);
    must("ip -n " + sw + " link add br0 type bridge");
    must("ip -n " + sw + " link set br0 up");
}

EmulatedInternet::~EmulatedInternet() { removeAll(m_prefix); }

void EmulatedInternet::link(const std::string &ns, const std::string &sideNs, const std::string &sidePort,
                            const std::string &bridge, LinkRate rate)
{
    must("ip link add eth0 netns " + ns + " type veth peer name " + sidePort + " netns " + sideNs);
    must("ip -n " + ns + " link set eth0 up");
    must("ip -n " + ns + " link set lo up");
    must("ip -n " + sideNs + " link set " + sidePort + " master " + bridge);
    must("ip -n " + sideNs + " link set " + sidePort + " up");
    must("tc -n " + ns + " qdisc add dev eth0" + tbf(rate.upMbit));
    must("tc -n " + sideNs + " qdisc add dev " + sidePort + tbf(rate.downMbit));
}

int EmulatedInternet::addPublicHost(LinkRate rate)
{
    const int index = m_public++;
    Host h{m_prefix + "-h" + std::to_string(index), "10." + std::to_string(m_subnet) + ".0." + std::to_string(index + 1)};
    must("ip netns add " + h.ns);
    link(h.ns, m_prefix + "-sw", "h" + std::to_string(index), "br0", rate);
    must("ip -n " + h.ns + " addr add " + h.address + "/24 dev eth0");
    m_hosts.push_back(h);
    return static_cast<int>(m_hosts.size()) - 1;
}

int EmulatedInternet::addRouter()
{
    const int j = static_cast<int>(m_routers.size());
    Router r{m_prefix + "-r" + std::to_string(j), "10." + std::to_string(m_subnet) + ".0." + std::to_string(101 + j)};
    const std::string sw = m_prefix + "-sw", lan = "192.168." + std::to_string(j + 1) + ".1/24";
    must("ip netns add " + r.ns);
    must("ip link add wan netns " + r.ns + " type veth peer name r" + std::to_string(j) + " netns " + sw);
    must("ip -n " + sw + " link set r" + std::to_string(j) + " master br0");
    must("ip -n " + sw + " link set r" + std::to_string(j) + " up");
    must("ip -n " + r.ns + " addr add " + r.address + "/24 dev wan");
    must("ip -n " + r.ns + " link set wan up");
    must("ip -n " + r.ns + " link set lo up");
    must("ip -n " + r.ns + " link add lan type bridge");
    must("ip -n " + r.ns + " addr add " + lan + " dev lan");
    must("ip -n " + r.ns + " link set lan up");
    must("ip netns exec " + r.ns + " sysctl -qw net.ipv4.ip_forward=1");
    must("ip netns exec " + r.ns + " nft add table ip nat");
    must("ip netns exec " + r.ns + " nft 'add chain ip nat post { type nat hook postrouting priority 100 ; }'");
    must("ip netns exec " + r.ns + " nft add rule ip nat post oifname wan masquerade");
    m_routers.push_back(r);
    return j;
}

int EmulatedInternet::addVolunteer(int router, LinkRate rate)
{
    Router &r = m_routers.at(router);
    const int k = r.volunteers++;
    const std::string net = "192.168." + std::to_string(router + 1) + ".";
    Host h{m_prefix + "-v" + std::to_string(router) + "x" + std::to_string(k), net + std::to_string(k + 2)};
    must("ip netns add " + h.ns);
    link(h.ns, r.ns, "v" + std::to_string(k), "lan", rate);
    must("ip -n " + h.ns + " addr add " + h.address + "/24 dev eth0");
    must("ip -n " + h.ns + " route add default via " + net + "1");
    m_hosts.push_back(h);
    return static_cast<int>(m_hosts.size()) - 1;
}

} // namespace dedloc::test
