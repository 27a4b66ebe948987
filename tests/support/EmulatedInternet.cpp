#include "EmulatedInternet.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace dedloc::test {

namespace {

bool run(const std::string &command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

void must(const std::string &command)
{
    if (!run(command))
        throw std::runtime_error("emulated internet: \"" + command + "\" failed");
}

// How long tbf may queue a packet: 100 ms, or DEDLOC_NET_QUEUE_MS for experiments with deeper
// home-router buffers.
std::string queueLatency()
{
    const char *ms = std::getenv("DEDLOC_NET_QUEUE_MS");
    return std::to_string(ms ? std::max(1L, std::atol(ms)) : 100L) + "ms";
}

std::string tbf(double mbit)
{
    // At least one MTU per burst; kbit granularity so that 2 Mbit/s and below stay exact.
    return " root tbf rate " + std::to_string(static_cast<long>(mbit * 1000)) + "kbit burst 32kb latency " + queueLatency();
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

EmulatedInternet::EmulatedInternet(std::string prefix, int subnet, std::string publicNet)
    : m_prefix(std::move(prefix)), m_subnet(subnet),
      m_publicNet(publicNet.empty() ? "10." + std::to_string(subnet) + ".0" : std::move(publicNet))
{
    removeAll(m_prefix);
    const std::string sw = m_prefix + "-sw";
    must("ip netns add " + sw);
    must("ip -n " + sw + " link add br0 type bridge");
    must("ip -n " + sw + " link set br0 up");
}

EmulatedInternet::~EmulatedInternet()
{
    stopDaemons();
    m_delays.clear(); // their threads, before their namespaces go
    removeAll(m_prefix);
}

void EmulatedInternet::link(const std::string &ns, const std::string &sideNs, const std::string &sidePort,
                            const std::string &bridge, LinkRate rate)
{
    must("ip link add eth0 netns " + ns + " type veth peer name " + sidePort + " netns " + sideNs);
    must("ip -n " + ns + " link set eth0 up");
    must("ip -n " + ns + " link set lo up");
    // Experiments: DEDLOC_NET_IDLE_RESTART=0 keeps a TCP connection's window across idle time
    // (net.ipv4.tcp_slow_start_after_idle, 1 by default, as on volunteers' machines).
    if (const char *restart = std::getenv("DEDLOC_NET_IDLE_RESTART"))
        must("ip netns exec " + ns + " sysctl -qw net.ipv4.tcp_slow_start_after_idle=" + std::string(restart == std::string("0") ? "0" : "1"));
    must("ip -n " + sideNs + " link set " + sidePort + " master " + bridge);
    must("ip -n " + sideNs + " link set " + sidePort + " up");
    must("tc -n " + ns + " qdisc add dev eth0" + tbf(rate.upMbit));
    must("tc -n " + sideNs + " qdisc add dev " + sidePort + tbf(rate.downMbit));
}

int EmulatedInternet::addPublicHost(LinkRate rate)
{
    const int index = m_public++;
    Host h{m_prefix + "-h" + std::to_string(index), m_publicNet + "." + std::to_string(index + 1)};
    must("ip netns add " + h.ns);
    link(h.ns, m_prefix + "-sw", std::string("h").append(std::to_string(index)), "br0", rate);
    must("ip -n " + h.ns + " addr add " + h.address + "/24 dev eth0");
    if (rate.delayMs > 0.0) // the two halves of the switch's /24, more specific than eth0's route
        m_delays.push_back(std::make_unique<DelayLine>(
            h.ns, rate.delayMs, std::vector<std::string>{m_publicNet + ".0/25", m_publicNet + ".128/25"}, h.address));
    m_hosts.push_back(h);
    return static_cast<int>(m_hosts.size()) - 1;
}

int EmulatedInternet::addRouter(RouterOptions options)
{
    const int j = static_cast<int>(m_routers.size());
    Router r{m_prefix + "-r" + std::to_string(j), m_publicNet + "." + std::to_string(101 + j)};
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
    if (options.miniupnpd)
        startMiniupnpd(m_routers.back(), j);
    return j;
}

int EmulatedInternet::addVolunteer(int router, LinkRate rate)
{
    Router &r = m_routers.at(router);
    const int k = r.volunteers++;
    const std::string net = "192.168." + std::to_string(router + 1) + ".";
    Host h{m_prefix + "-v" + std::to_string(router) + "x" + std::to_string(k), net + std::to_string(k + 2)};
    must("ip netns add " + h.ns);
    link(h.ns, r.ns, std::string("v").append(std::to_string(k)), "lan", rate);
    must("ip -n " + h.ns + " addr add " + h.address + "/24 dev eth0");
    must("ip -n " + h.ns + " route add default via " + net + "1");
    if (rate.delayMs > 0.0) // the two halves of the default route; the LAN's own /24 stays direct
        m_delays.push_back(std::make_unique<DelayLine>(
            h.ns, rate.delayMs, std::vector<std::string>{"0.0.0.0/1", "128.0.0.0/1"}, h.address));
    m_hosts.push_back(h);
    return static_cast<int>(m_hosts.size()) - 1;
}

} // namespace dedloc::test

namespace dedloc::test {

namespace {

// The chains miniupnpd (nftables backend) fills with its DNAT and filter rules; Debian's
// /etc/miniupnpd/nft_init.sh makes the same but sources a file that miniupnpd-nftables lacks
// and sets the forward policy to drop.
const char *const MiniupnpdTables = R"(table inet miniupnpd {
  chain miniupnpd {
  }
  chain prerouting_miniupnpd {
  }
  chain postrouting_miniupnpd {
  }
  chain forward {
    type filter hook forward priority 0; policy accept;
    jump miniupnpd
  }
  chain prerouting {
    type nat hook prerouting priority -100; policy accept;
    jump prerouting_miniupnpd
  }
  chain postrouting {
    type nat hook postrouting priority 100; policy accept;
    jump postrouting_miniupnpd
  }
}
)";

std::string readFile(const std::string &path)
{
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void writeFile(const std::string &path, const std::string &text)
{
    std::ofstream out(path, std::ios::trunc);
    out << text;
    if (!out)
        throw std::runtime_error("emulated internet: cannot write " + path);
}

} // namespace

bool EmulatedInternet::miniupnpdAvailable(std::string *why)
{
    if (!available(why))
        return false;
    if (programExists("miniupnpd"))
        return true;
    if (why)
        *why = "needs miniupnpd (Debian package miniupnpd-nftables) for the routers' UPnP-IGD and NAT-PMP";
    return false;
}

void EmulatedInternet::startMiniupnpd(Router &r, int j)
{
    const std::string base = "/tmp/" + r.ns + "-miniupnpd", lan = "192.168." + std::to_string(j + 1) + ".0/24";
    writeFile(base + ".nft", MiniupnpdTables);
    must("ip netns exec " + r.ns + " nft -f " + base + ".nft");
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "3d3cec3a-8cf0-11e0-98ee-%012x", static_cast<unsigned>(::getpid() * 16 + j));
    writeFile(base + ".conf", "ext_ifname=wan\nlistening_ip=lan\nhttp_port=0\nenable_natpmp=yes\nenable_upnp=yes\n"
                              "secure_mode=yes\next_perform_stun=no\nsystem_uptime=yes\nclean_ruleset_interval=600\n"
                              "upnp_table_name=miniupnpd\nupnp_nat_table_name=miniupnpd\nlease_file=" + base + ".leases\n"
                              "uuid=" + std::string(uuid) + "\nallow 1024-65535 " + lan + " 1024-65535\n"
                              "deny 0-65535 0.0.0.0/0 0-65535\n");
    std::filesystem::remove(base + ".leases");
    const std::string log = base + ".log", conf = base + ".conf", pidFile = base + ".pid";
    const char *argv[] = {"ip", "netns", "exec", r.ns.c_str(), "miniupnpd", "-d", "-f", conf.c_str(), "-P", pidFile.c_str(), nullptr};
    const pid_t pid = ::fork();
    if (pid < 0)
        throw std::runtime_error("emulated internet: fork for miniupnpd failed");
    if (pid == 0) { // only async-signal-safe calls until exec
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            ::dup2(fd, 1);
            ::dup2(fd, 2);
        }
        ::execvp("ip", const_cast<char *const *>(argv));
        ::_exit(127);
    }
    r.miniupnpd = pid;
    // Ready once it listens for NAT-PMP, the last thing it opens.
    for (int i = 0; i < 100; ++i) {
        if (readFile(log).find("Listening for NAT-PMP") != std::string::npos)
            return;
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) {
            r.miniupnpd = -1;
            throw std::runtime_error("emulated internet: miniupnpd in " + r.ns + " exited: " + readFile(log));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("emulated internet: miniupnpd in " + r.ns + " did not start within 5 s: " + readFile(log));
}

void EmulatedInternet::stopDaemons() noexcept
{
    for (auto &r : m_routers) {
        if (r.miniupnpd <= 0)
            continue;
        ::kill(r.miniupnpd, SIGTERM);
        int status = 0;
        bool gone = false;
        for (int i = 0; i < 40 && !gone; ++i) { // it removes its rules first: up to 2 s
            gone = ::waitpid(r.miniupnpd, &status, WNOHANG) == r.miniupnpd;
            if (!gone)
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        if (!gone) {
            ::kill(r.miniupnpd, SIGKILL);
            ::waitpid(r.miniupnpd, &status, 0);
        }
        r.miniupnpd = -1;
        std::error_code ec;
        for (const char *ext : {".nft", ".conf", ".leases", ".pid", ".log"})
            std::filesystem::remove("/tmp/" + r.ns + "-miniupnpd" + ext, ec);
    }
}

} // namespace dedloc::test
