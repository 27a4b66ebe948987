#include "net/PortMapping.h"

#include "util/Error.h"
#include "util/Log.h"

#include <miniupnpc/miniupnpc.h>
#include <miniupnpc/upnpcommands.h>
#include <miniupnpc/upnperrors.h>
#include <natpmp.h>

#include <arpa/inet.h>
#include <pthread.h>
#include <sys/select.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace dedloc {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int UpnpOnlyPermanentLeases = 725;
constexpr int UpnpConflict = 718;

std::string upnpError(int code)
{
    const char *text = strupnperror(code);
    return "UPnP error " + std::to_string(code) + (text ? std::string(" (") + text + ")" : std::string());
}

std::string natpmpError(int code)
{
    switch (code) {
    case NATPMP_TRYAGAIN: return "no answer";
    case NATPMP_ERR_RECVFROM: return "no answer from the gateway";
    case NATPMP_ERR_NOGATEWAYSUPPORT: return "the gateway does not serve NAT-PMP (its UDP port 5351 refused)";
    case NATPMP_ERR_CANNOTGETGATEWAY: return "no default gateway";
    case NATPMP_ERR_NOTAUTHORIZED: return "refused by the gateway (not authorized)";
    case NATPMP_ERR_OUTOFRESOURCES: return "refused by the gateway (out of resources)";
    case NATPMP_ERR_NETWORKFAILURE: return "the gateway has no external address (network failure)";
    case NATPMP_ERR_UNSUPPORTEDVERSION: return "the gateway speaks another NAT-PMP version";
    default: return "NAT-PMP error " + std::to_string(code);
    }
}

// Alternatives to an external port that is taken: far from the usual ports, within 1024..65535.
std::vector<std::uint16_t> candidatePorts(std::uint16_t port)
{
    std::vector<std::uint16_t> c{port};
    for (int k = 1; k <= 3; ++k)
        c.push_back(static_cast<std::uint16_t>(1024 + (port - 1024 + 10007 * k) % (65536 - 1024)));
    return c;
}

} // namespace

const char *portMappingMethodName(PortMappingMethod m)
{
    switch (m) {
    case PortMappingMethod::Upnp: return "UPnP";
    case PortMappingMethod::NatPmp: return "NAT-PMP";
    case PortMappingMethod::None: break;
    }
    return "none";
}

std::string PortMappingResult::describe() const
{
    if (!ok())
        return {};
    std::string ports;
    for (std::size_t i = 1; i < externalPorts.size(); ++i)
        ports += (i + 1 == externalPorts.size() ? " and " : ", ") + std::to_string(externalPorts[i]);
    return std::string("a ") + portMappingMethodName(method) + " port mapping on the router (" + externalAddress + ":"
           + (externalPorts.empty() ? std::string("?") : std::to_string(externalPorts.front())) + ports + ")";
}

bool isPrivateIpv4(const std::string &address)
{
    in_addr a{};
    if (::inet_pton(AF_INET, address.c_str(), &a) != 1)
        return true;
    const std::uint32_t v = ntohl(a.s_addr);
    auto in = [v](std::uint32_t net, int bits) { return (v >> (32 - bits)) == (net >> (32 - bits)); };
    return in(0x00000000, 8) || in(0x0A000000, 8) || in(0x64400000, 10) || in(0x7F000000, 8) || in(0xA9FE0000, 16)
           || in(0xAC100000, 12) || in(0xC0A80000, 16);
}

// The state of the method that worked: miniupnpc's control URLs, or the NAT-PMP socket.
struct PortMapping::Router {
    PortMappingMethod method = PortMappingMethod::None;
    UPNPUrls urls{};
    IGDdatas data{};
    bool urlsValid = false;
    natpmp_t natpmp{};
    bool natpmpOpen = false;
    std::string lanAddress;
    std::vector<std::uint16_t> mapped; // external ports held, in the order of the options' ports
    // TCP, or UDP (PortMappingOptions::udp): the protocol of every port.
    const char *protocol = "TCP";
    int natpmpProtocol = NATPMP_PROTOCOL_TCP;
    int natpmpMappingReply = NATPMP_RESPTYPE_TCPPORTMAPPING;

    explicit Router(bool udp)
        : protocol(udp ? "UDP" : "TCP"), natpmpProtocol(udp ? NATPMP_PROTOCOL_UDP : NATPMP_PROTOCOL_TCP),
          natpmpMappingReply(udp ? NATPMP_RESPTYPE_UDPPORTMAPPING : NATPMP_RESPTYPE_TCPPORTMAPPING)
    {
    }
    Router(const Router &) = delete;
    Router &operator=(const Router &) = delete;
    ~Router()
    {
        if (urlsValid)
            FreeUPNPUrls(&urls);
        if (natpmpOpen)
            closenatpmp(&natpmp);
    }

    // --- UPnP-IGD
    bool upnpOpen(const PortMappingOptions &o, std::string &why)
    {
        int error = 0;
        UPNPDev *devices = upnpDiscoverDevice("urn:schemas-upnp-org:device:InternetGatewayDevice:1",
                                              static_cast<int>(o.discoverSeconds * 1000), nullptr, nullptr,
                                              UPNP_LOCAL_PORT_ANY, 0, 2, &error);
        if (!devices) {
            why = "no UPnP gateway answered within " + std::to_string(static_cast<int>(o.discoverSeconds * 1000)) + " ms";
            return false;
        }
        char lan[64] = {};
        const int igd = UPNP_GetValidIGD(devices, &urls, &data, lan, sizeof lan);
        freeUPNPDevlist(devices);
        urlsValid = igd != 0;
        if (igd != 1 && igd != 2) {
            why = "a UPnP device answered but is no usable internet gateway";
            return false;
        }
        lanAddress = o.lanAddress.empty() || o.lanAddress == "0.0.0.0" ? std::string(lan) : o.lanAddress;
        method = PortMappingMethod::Upnp;
        return true;
    }

    bool upnpExternal(std::string &address, std::string &why)
    {
        char ext[64] = {};
        const int r = UPNP_GetExternalIPAddress(urls.controlURL, data.first.servicetype, ext);
        if (r != UPNPCOMMAND_SUCCESS || ext[0] == '\0') {
            why = "the UPnP gateway did not tell its external address: " + upnpError(r);
            return false;
        }
        address = ext;
        return true;
    }

    // One AddPortMapping; a router that takes only permanent leases gets lease 0.
    int upnpAdd(std::uint16_t external, std::uint16_t internal, const std::string &desc, std::uint32_t &lease)
    {
        const std::string e = std::to_string(external), i = std::to_string(internal);
        int r = UPNP_AddPortMapping(urls.controlURL, data.first.servicetype, e.c_str(), i.c_str(), lanAddress.c_str(),
                                    desc.c_str(), protocol, nullptr, std::to_string(lease).c_str());
        if (r == UpnpOnlyPermanentLeases && lease != 0) {
            lease = 0;
            r = UPNP_AddPortMapping(urls.controlURL, data.first.servicetype, e.c_str(), i.c_str(), lanAddress.c_str(),
                                    desc.c_str(), protocol, nullptr, "0");
        }
        return r;
    }

    // The external port now forwarded to `internal`, or 0 (`why` says why).
    std::uint16_t upnpMapOne(std::uint16_t internal, const std::string &desc, std::uint32_t &lease, std::string &why)
    {
        int r = 0;
        for (const auto external : candidatePorts(internal)) {
            r = upnpAdd(external, internal, desc, lease);
            if (r == UPNPCOMMAND_SUCCESS)
                return external;
            if (r != UpnpConflict)
                break;
        }
        if (r == UpnpConflict) { // IGD v2 routers choose a free port themselves
            char reserved[16] = {};
            const std::string i = std::to_string(internal);
            r = UPNP_AddAnyPortMapping(urls.controlURL, data.first.servicetype, i.c_str(), i.c_str(), lanAddress.c_str(),
                                       desc.c_str(), protocol, nullptr, std::to_string(lease).c_str(), reserved);
            if (r == UPNPCOMMAND_SUCCESS)
                return static_cast<std::uint16_t>(std::atoi(reserved));
        }
        why = "the UPnP gateway refused to map " + std::string(protocol) + " port " + std::to_string(internal) + ": " + upnpError(r);
        return 0;
    }

    // --- NAT-PMP (RFC 6886)
    // Waits for the answer to the pending request until `seconds` pass (libnatpmp resends).
    int natpmpAnswer(natpmpresp_t &response, double seconds)
    {
        const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()).count();
            if (left <= 0)
                return NATPMP_TRYAGAIN;
            timeval tv{};
            getnatpmprequesttimeout(&natpmp, &tv);
            long long wait = std::max<long long>(0, static_cast<long long>(tv.tv_sec) * 1000000 + tv.tv_usec);
            wait = std::min<long long>(wait, left);
            tv.tv_sec = static_cast<time_t>(wait / 1000000);
            tv.tv_usec = static_cast<suseconds_t>(wait % 1000000);
            fd_set fds;
            FD_ZERO(&fds);
            FD_SET(natpmp.s, &fds);
            ::select(natpmp.s + 1, &fds, nullptr, nullptr, &tv);
            const int r = readnatpmpresponseorretry(&natpmp, &response);
            if (r != NATPMP_TRYAGAIN)
                return r;
        }
    }

    bool natpmpOpenGateway(const PortMappingOptions &o, std::string &address, std::string &why)
    {
        in_addr gw{};
        if (!o.natpmpGateway.empty() && ::inet_pton(AF_INET, o.natpmpGateway.c_str(), &gw) != 1) {
            why = "the NAT-PMP gateway \"" + o.natpmpGateway + "\" is no IPv4 address";
            return false;
        }
        int r = initnatpmp(&natpmp, o.natpmpGateway.empty() ? 0 : 1, gw.s_addr);
        natpmpOpen = r >= 0;
        if (r >= 0)
            r = sendpublicaddressrequest(&natpmp);
        natpmpresp_t response{};
        if (r >= 0)
            r = natpmpAnswer(response, o.natpmpSeconds);
        if (r < 0 || response.type != NATPMP_RESPTYPE_PUBLICADDRESS) {
            why = "NAT-PMP: " + natpmpError(r < 0 ? r : NATPMP_ERR_UNDEFINEDERROR);
            return false;
        }
        char text[INET_ADDRSTRLEN] = {};
        ::inet_ntop(AF_INET, &response.pnu.publicaddress.addr, text, sizeof text);
        address = text;
        method = PortMappingMethod::NatPmp;
        return true;
    }

    // Maps (lifetime > 0) or removes (0) one port; the public port the gateway chose, or 0.
    std::uint16_t natpmpRequest(std::uint16_t internal, std::uint16_t external, std::uint32_t &lifetime, double seconds,
                                std::string &why)
    {
        natpmpresp_t response{};
        int r = sendnewportmappingrequest(&natpmp, natpmpProtocol, internal, external, lifetime);
        if (r >= 0)
            r = natpmpAnswer(response, seconds);
        if (r < 0 || response.type != natpmpMappingReply) {
            why = "NAT-PMP gateway refused to map " + std::string(protocol) + " port " + std::to_string(internal) + ": "
                  + natpmpError(r < 0 ? r : NATPMP_ERR_UNDEFINEDERROR);
            return 0;
        }
        lifetime = response.pnu.newportmapping.lifetime;
        return lifetime == 0 ? external : response.pnu.newportmapping.mappedpublicport;
    }

    // --- the whole mapping, and its renewal and removal, by the method that worked
    bool mapUpnp(const PortMappingOptions &o, PortMappingResult &result)
    {
        if (!upnpOpen(o, result.why) || !upnpExternal(result.externalAddress, result.why))
            return false;
        return mapPorts(o, result);
    }

    bool mapNatPmp(const PortMappingOptions &o, PortMappingResult &result)
    {
        if (!natpmpOpenGateway(o, result.externalAddress, result.why))
            return false;
        return mapPorts(o, result);
    }

    bool mapPorts(const PortMappingOptions &o, PortMappingResult &result)
    {
        if (isPrivateIpv4(result.externalAddress) && !o.allowPrivateExternal) {
            result.why = "the router's external address " + result.externalAddress + " is private: another NAT stands in "
                         "front of it (double NAT, or the provider's CGNAT), so a mapping there cannot make this machine reachable";
            return false;
        }
        std::uint32_t lease = o.leaseSeconds;
        for (const auto port : o.ports) {
            std::uint32_t granted = lease;
            const std::uint16_t external = method == PortMappingMethod::Upnp
                                               ? upnpMapOne(port, o.description, granted, result.why)
                                               : natpmpRequest(port, port, granted, o.natpmpSeconds, result.why);
            if (external == 0) {
                remove(o);
                return false;
            }
            lease = std::min(lease, granted);
            mapped.push_back(external);
        }
        result.method = method;
        result.externalPorts = mapped;
        result.internalAddress = method == PortMappingMethod::Upnp ? lanAddress : std::string("this machine");
        result.leaseSeconds = lease;
        return true;
    }

    // Asks again for each mapping held; false (with `why`) when the router refuses one.
    bool renew(const PortMappingOptions &o, std::uint32_t &lease, std::string &why)
    {
        std::uint32_t shortest = o.leaseSeconds;
        for (std::size_t i = 0; i < mapped.size(); ++i) {
            std::uint32_t granted = o.leaseSeconds;
            if (method == PortMappingMethod::Upnp) {
                const int r = upnpAdd(mapped[i], o.ports[i], o.description, granted);
                if (r != UPNPCOMMAND_SUCCESS) {
                    why = "the UPnP gateway refused to renew the mapping of port " + std::to_string(mapped[i]) + ": " + upnpError(r);
                    return false;
                }
            } else {
                const auto external = natpmpRequest(o.ports[i], mapped[i], granted, o.natpmpSeconds, why);
                if (external == 0)
                    return false;
                if (external != mapped[i])
                    log::warning("portmap", "the NAT-PMP gateway moved port " + std::to_string(o.ports[i]) + " from "
                                                + std::to_string(mapped[i]) + " to " + std::to_string(external));
                mapped[i] = external;
            }
            shortest = std::min(shortest, granted);
        }
        lease = shortest;
        return true;
    }

    void remove(const PortMappingOptions &o)
    {
        for (std::size_t i = 0; i < mapped.size(); ++i) {
            std::string why;
            if (method == PortMappingMethod::Upnp) {
                const int r = UPNP_DeletePortMapping(urls.controlURL, data.first.servicetype,
                                                     std::to_string(mapped[i]).c_str(), protocol, nullptr);
                if (r != UPNPCOMMAND_SUCCESS)
                    why = upnpError(r);
            } else {
                std::uint32_t zero = 0;
                (void)natpmpRequest(o.ports[i], 0, zero, o.natpmpSeconds, why);
            }
            if (!why.empty())
                log::warning("portmap", "could not remove the mapping of port " + std::to_string(mapped[i]) + ": " + why);
        }
        mapped.clear();
    }
};

PortMapping::PortMapping(PortMappingOptions options) : m_options(std::move(options))
{
    if (m_options.ports.empty())
        throw Error("port mapping: no port to map");
    if (std::find(m_options.ports.begin(), m_options.ports.end(), 0) != m_options.ports.end())
        throw Error("port mapping: port 0 cannot be mapped (bind the sockets first)");
    if (m_options.discoverSeconds <= 0 || m_options.natpmpSeconds <= 0)
        throw Error("port mapping: the discovery and NAT-PMP waits must be positive");
}

PortMapping::~PortMapping()
{
    try {
        stop();
    } catch (...) { // a destructor never throws; stop() only logs
    }
}

PortMappingResult PortMapping::result() const
{
    std::lock_guard lock(m_mutex);
    return m_result;
}

PortMappingResult PortMapping::map()
{
    stop();
    {
        std::lock_guard wakeLock(m_wakeMutex);
        m_stopping = false;
    }
    std::lock_guard lock(m_mutex);
    PortMappingResult upnp, natpmp;
    bool gatewayFound = false;
    if (m_options.tryUpnp) {
        m_router = std::make_unique<Router>(m_options.udp);
        if (m_router->mapUpnp(m_options, upnp)) {
            m_result = upnp;
            startRenewing();
            return m_result;
        }
        gatewayFound = m_router->urlsValid;
    }
    if (m_options.tryNatPmp && !gatewayFound) {
        m_router = std::make_unique<Router>(m_options.udp);
        if (m_router->mapNatPmp(m_options, natpmp)) {
            m_result = natpmp;
            startRenewing();
            return m_result;
        }
    }
    m_router.reset();
    m_result = PortMappingResult{};
    m_result.why = !m_options.tryUpnp      ? natpmp.why
                   : gatewayFound || !m_options.tryNatPmp ? upnp.why
                                                          : upnp.why + "; " + natpmp.why;
    if (m_result.why.empty())
        m_result.why = "no method to try";
    return m_result;
}

void PortMapping::startRenewing()
{
    if (m_options.autoRenew && m_result.leaseSeconds > 0)
        m_renewer = std::thread([this, lease = m_result.leaseSeconds] { renewLoop(lease); });
}

PortMappingResult PortMapping::renew()
{
    std::lock_guard lock(m_mutex);
    if (!m_router || m_router->mapped.empty()) {
        PortMappingResult none;
        none.why = "no mapping to renew";
        return none;
    }
    std::uint32_t lease = 0;
    std::string why;
    if (!m_router->renew(m_options, lease, why)) {
        PortMappingResult failed = m_result;
        failed.method = PortMappingMethod::None;
        failed.why = why;
        return failed; // the mappings held stay recorded: stop() still removes them
    }
    m_result.externalPorts = m_router->mapped;
    m_result.leaseSeconds = lease;
    return m_result;
}

void PortMapping::renewLoop(std::uint32_t leaseSeconds)
{
    pthread_setname_np(pthread_self(), "portmap-renew");
    double wait = std::max(1.0, leaseSeconds / 2.0);
    for (;;) {
        {
            std::unique_lock lock(m_wakeMutex);
            if (m_wake.wait_for(lock, std::chrono::duration<double>(wait), [this] { return m_stopping; }))
                return;
        }
        const auto r = renew();
        if (r.ok()) {
            wait = std::max(1.0, r.leaseSeconds / 2.0);
        } else {
            log::warning("portmap", "renewing the port mapping failed: " + r.why + "; trying again");
            wait = std::max(1.0, std::min(wait, 30.0));
        }
    }
}

void PortMapping::stop()
{
    {
        std::lock_guard lock(m_wakeMutex);
        m_stopping = true;
    }
    m_wake.notify_all();
    if (m_renewer.joinable() && m_renewer.get_id() != std::this_thread::get_id())
        m_renewer.join();
    std::lock_guard lock(m_mutex);
    if (m_router)
        m_router->remove(m_options);
    m_router.reset();
    if (m_result.ok()) {
        m_result = PortMappingResult{};
        m_result.why = "the mappings were removed";
    }
}

} // namespace dedloc
