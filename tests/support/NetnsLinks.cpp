#include "NetnsLinks.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>

namespace dedloc::test {

namespace {

bool run(const std::string &command)
{
    return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

void must(const std::string &command)
{
    if (!run(command))
        throw std::runtime_error("network namespaces: \"" + command + "\" failed");
}

} // namespace

bool NetnsLinks::available(std::string *why)
{
    if (::geteuid() != 0) {
        if (why)
            *why = "needs root (network namespaces, tc)";
        return false;
    }
    if (ipProgram().empty()) {
        if (why)
            *why = "needs iproute2 (ip)";
        return false;
    }
    return true;
}

std::string NetnsLinks::ipProgram()
{
    for (const char *p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"})
        if (std::filesystem::exists(p))
            return p;
    return {};
}

void NetnsLinks::removeAll(const std::string &prefix)
{
    for (int r = 0; r < 64; ++r)
        if (std::filesystem::exists("/run/netns/" + prefix + "-" + std::to_string(r)))
            run("ip netns del " + prefix + "-" + std::to_string(r));
    if (std::filesystem::exists("/run/netns/" + prefix + "-sw"))
        run("ip netns del " + prefix + "-sw");
}

NetnsLinks::NetnsLinks(std::string prefix, int members, double mbit, int subnet)
    : m_prefix(std::move(prefix)), m_subnet(subnet)
{
    removeAll(m_prefix);
    const std::string sw = m_prefix + "-sw";
    const std::string tbf = " root tbf rate " + std::to_string(static_cast<long>(mbit)) + "mbit burst 128kb latency 50ms";
    try {
        must("ip netns add " + sw);
        must("ip -n " + sw + " link add br0 type bridge");
        must("ip -n " + sw + " link set br0 up");
        for (int r = 0; r < members; ++r) {
            const std::string ns = nameOf(r), peer = "p" + std::to_string(r);
            must("ip netns add " + ns);
            must("ip link add eth0 netns " + ns + " type veth peer name " + peer + " netns " + sw);
            must("ip -n " + ns + " addr add " + hostOf(r) + "/24 dev eth0");
            must("ip -n " + ns + " link set eth0 up");
            must("ip -n " + ns + " link set lo up");
            must("ip -n " + sw + " link set " + peer + " master br0");
            must("ip -n " + sw + " link set " + peer + " up");
            must("tc -n " + ns + " qdisc add dev eth0" + tbf);
            must("tc -n " + sw + " qdisc add dev " + peer + tbf);
        }
    } catch (...) {
        removeAll(m_prefix);
        throw;
    }
}

NetnsLinks::~NetnsLinks() { removeAll(m_prefix); }

} // namespace dedloc::test
