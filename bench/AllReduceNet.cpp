#include "AllReduceNet.h"

#include "AllReduceMember.h"

namespace dedloc::bench {

AllReduceNet AllReduceNet::loopback(std::string host)
{
    AllReduceNet net;
    net.m_host = std::move(host);
    return net;
}

AllReduceNet AllReduceNet::links(int maxN, double mbit)
{
    AllReduceNet net;
    net.m_links = std::make_unique<test::NetnsLinks>("dlbench", maxN, mbit);
    return net;
}

AllReduceNet AllReduceNet::internet(int maxN, test::LinkRate rate, int behindNat)
{
    AllReduceNet net;
    net.m_behindNat = behindNat;
    net.m_internet = std::make_unique<test::EmulatedInternet>("dlbnet", 216);
    for (int r = 0; r < maxN - behindNat; ++r)
        net.m_publicHosts.push_back(net.m_internet->addPublicHost(rate));
    for (int v = 0; v < behindNat; ++v) {
        const int router = v % 2 == 0 ? net.m_internet->addRouter() : v / 2;
        net.m_volunteers.push_back(net.m_internet->addVolunteer(router, rate));
    }
    return net;
}

MemberPlace AllReduceNet::placeOf(int rank, int n) const
{
    if (m_links)
        return {m_links->nameOf(rank), m_links->hostOf(rank)};
    if (!m_internet)
        return {"", m_host};
    const int publicMembers = n - m_behindNat;
    if (rank < publicMembers) {
        const int host = m_publicHosts.at(static_cast<std::size_t>(rank));
        return {m_internet->namespaceOf(host), m_internet->addressOf(host)};
    }
    const int host = m_volunteers.at(static_cast<std::size_t>(rank - publicMembers));
    return {m_internet->namespaceOf(host), ClientModeHost};
}

std::string AllReduceNet::description() const
{
    if (m_links)
        return "10.213.0.x (one namespace per member)";
    if (!m_internet)
        return m_host;
    return "10.216.0.x (emulated internet, one host per member" +
           (m_behindNat > 0 ? ", " + std::to_string(m_behindNat) + " behind NAT, two per home router)"
                            : std::string(")"));
}

} // namespace dedloc::bench
