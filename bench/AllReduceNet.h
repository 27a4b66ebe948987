#pragma once
// Where bench_allreduce's members run: on loopback, on emulated symmetric links (--netns-mbit,
// tests/support/NetnsLinks), or on an emulated internet (--internet, tests/support/
// EmulatedInternet) with public hosts and, with --behind-nat K, home routers that masquerade.
// Built once for the largest N and removed by the destructor (also after a stop signal, since
// main returns normally then).
//
// On the emulated internet, member r of N is a public host when r < N - K, else volunteer
// r - (N - K) behind router (r - (N - K)) / 2: two volunteers per router, every host on its own
// DOWN/UP link. Volunteers are not reachable: our members there run in client mode.
#include "EmulatedInternet.h" // tests/support
#include "NetnsLinks.h"

#include <memory>
#include <string>

namespace dedloc::bench {

struct MemberPlace {
    std::string ns;   // network namespace; "" on loopback
    std::string host; // address to bind; AllReduceMember.h ClientModeHost when not reachable
};

class AllReduceNet final {
  public:
    static AllReduceNet loopback(std::string host);
    // Throw std::runtime_error when a namespace or link cannot be made.
    static AllReduceNet links(int maxN, double mbit);
    static AllReduceNet internet(int maxN, test::LinkRate rate, int behindNat);

    [[nodiscard]] MemberPlace placeOf(int rank, int n) const;
    // Members behind NAT (0 unless on the emulated internet with --behind-nat).
    [[nodiscard]] int behindNat() const { return m_behindNat; }
    // The address the title line shows.
    [[nodiscard]] std::string description() const;

  private:
    std::string m_host;
    std::unique_ptr<test::NetnsLinks> m_links;
    std::unique_ptr<test::EmulatedInternet> m_internet;
    std::vector<int> m_publicHosts, m_volunteers; // EmulatedInternet host indices
    int m_behindNat = 0;
};

} // namespace dedloc::bench
