#pragma once
// Port mappings on the volunteer's home router, as BitTorrent clients obtain them: the peer asks
// the router to forward external TCP ports to its service and all-reduce ports (and a UDP port to
// its DHT node, with a second mapping of `udp` ports), advertises the
// router's external address with those ports (net/Announce.h), and lets the dial-back
// (averaging/Reachability.h) confirm that others get through.
//
// Methods, in this order:
//   1. UPnP-IGD (libminiupnpc): SSDP discovery of an InternetGatewayDevice:1, then the
//      WANIPConnection:1 / WANPPPConnection:1 actions GetExternalIPAddress, AddPortMapping (lease
//      `leaseSeconds`; lease 0 "permanent" when the router answers 725
//      OnlyPermanentLeasesSupported), DeletePortMapping (UPnP IGD v1, WANIPConnection:1 spec).
//   2. NAT-PMP (libnatpmp, RFC 6886), only where UPnP found no gateway device: public address
//      request, then one TCP (or UDP) mapping request per port to the gateway's UDP port 5351;
//      lifetime 0 removes a mapping.
// For each local port the same external port is asked for first; when it is taken, UPnP tries a
// few others (and AddAnyPortMapping, where the router has it), NAT-PMP takes the port the
// router assigns.
//
// Time: every network call is bounded. UPnP discovery waits `discoverSeconds`; each UPnP action
// is one HTTP request under miniupnpc's 3 s socket timeouts; each NAT-PMP request waits at most
// `natpmpSeconds` for its answer (libnatpmp's retries within it). With no router at all, map()
// returns within discoverSeconds + 2 x natpmpSeconds (about 4 s with the defaults).
//
// Threads: map(), renew() and remove() may be called from any thread (an internal mutex orders
// them); sockets are opened on the calling thread, so in a network namespace they belong to the
// caller's namespace (tests enter one with setns()). After a successful map() with a lease, a
// renewal thread ("portmap-renew") renews at half the granted lease; stop() and the destructor
// wake it, wait for at most the one bounded call in progress, then remove the mappings.
//
// Errors: nothing throws but a bad PortMappingOptions in the constructor (dedloc::Error: no
// ports, a port 0, a lease < 0); every network failure is a result whose `why` is one line.
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dedloc {

enum class PortMappingMethod { None, Upnp, NatPmp };
[[nodiscard]] const char *portMappingMethodName(PortMappingMethod m); // "none", "UPnP", "NAT-PMP"

struct PortMappingOptions {
    std::vector<std::uint16_t> ports; // local ports to map (e.g. all-reduce, service)
    bool udp = false;                 // the ports are UDP (e.g. the DHT's), not TCP
    // The LAN address the ports are bound on (the internal client of a UPnP mapping); empty or
    // "0.0.0.0": the address of this machine toward the gateway (miniupnpc finds it). NAT-PMP
    // always maps to the requesting address.
    std::string lanAddress;
    std::string description = "dedloc";  // shown in the router's mapping list
    std::uint32_t leaseSeconds = 3600;     // asked for; 0: permanent
    double discoverSeconds = 2.0;          // SSDP wait
    double natpmpSeconds = 1.0;            // wait per NAT-PMP request
    bool tryUpnp = true;
    bool tryNatPmp = true;
    // NAT-PMP gateway (IPv4 dotted quad); empty: the default route's gateway (/proc/net/route).
    std::string natpmpGateway;
    // An external address in a private range (RFC 1918, CGNAT 100.64/10, loopback, link-local)
    // means another NAT stands in front of the router (double NAT): the mapping cannot make this
    // peer reachable, so map() removes it and fails. Tests on emulated private "public" networks
    // set this.
    bool allowPrivateExternal = false;
    bool autoRenew = true; // renew at half the granted lease on an internal thread
};

struct PortMappingResult {
    PortMappingMethod method = PortMappingMethod::None;
    std::string externalAddress;              // dotted IPv4, e.g. "203.0.113.7"
    std::vector<std::uint16_t> externalPorts; // one per PortMappingOptions::ports, same order
    std::string internalAddress;              // the LAN address the router forwards to
    std::uint32_t leaseSeconds = 0;           // granted; 0: permanent
    std::string why;                          // failure: one line saying why nothing worked
    [[nodiscard]] bool ok() const { return method != PortMappingMethod::None; }
    // "a UPnP port mapping on the router (203.0.113.7:40000)"; "" when !ok().
    [[nodiscard]] std::string describe() const;
};

// Whether a dotted IPv4 address is private, shared (CGNAT), loopback, link-local or unspecified,
// i.e. not an address others on the internet reach. Unparsable text counts as private.
[[nodiscard]] bool isPrivateIpv4(const std::string &address);

class PortMapping final {
public:
    explicit PortMapping(PortMappingOptions options);
    ~PortMapping(); // stop(); never throws
    PortMapping(const PortMapping &) = delete;
    PortMapping &operator=(const PortMapping &) = delete;

    // Tries UPnP, then NAT-PMP; on success starts the renewal thread (autoRenew, lease > 0).
    // Calling it again first removes the mappings it holds.
    PortMappingResult map();
    // Asks again for the mappings held (same external ports); fails when none are held or the
    // router refuses. The renewal thread calls this.
    PortMappingResult renew();
    // Stops renewing and removes the mappings held (bounded; errors are only logged).
    void stop();
    // The last result of map() or renew().
    [[nodiscard]] PortMappingResult result() const;

private:
    struct Router; // the method's state: miniupnpc URLs or the natpmp_t socket
    void startRenewing(); // under m_mutex
    void renewLoop(std::uint32_t leaseSeconds);

    PortMappingOptions m_options;
    mutable std::mutex m_mutex; // guards everything below and orders the network calls
    std::unique_ptr<Router> m_router;
    PortMappingResult m_result;
    std::mutex m_wakeMutex;
    std::condition_variable m_wake;
    bool m_stopping = false; // under m_wakeMutex
    std::thread m_renewer;
};

} // namespace dedloc
