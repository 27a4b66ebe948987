#pragma once
// Fetching one training state from state donors, part by part (docs/PROTOCOL.md "State
// sharing"): from one donor at a time, or from several donors of the same state at once. The
// choice of donors is averaging/StateDownload.h's; this unit moves the parts.
//
// Over a donor's service socket, "state?" gives the snapshot's epoch, layout and digest (SHA-256
// of its fp32 values) and pins that snapshot for the download; each "part?" returns at most
// partElements values. A PartialState keeps the parts fetched so far, whoever served them, so a
// download goes on where another stopped when the next donor offers the same digest and layout.
// The assembled state is checked against the digest. Blame: a donor whose own answer breaks the
// protocol (another layout, a part of the wrong size, a malformed reply, a state of its own with
// non-finite values) is `invalid`; a state that misses its digest proves its donor `lied` when
// that donor served every part itself. Parts from several donors cannot tell who lied at once:
// the state is kept aside as a DisputedState, the caller starts over from one donor, and once a
// state of that digest is verified, donorsOfOtherParts() names every donor that served a part
// differing from it (the digest is SHA-256: no other bytes have it, so each of them served a
// state it did not offer).
//
// Threads: downloadFrom runs on the calling thread; downloadFromSeveral runs one thread per
// donor and returns when all have ended. Both return within about partTimeout after progress
// stops, or soon after `stop` becomes true.
#include "averaging/PeerService.h"
#include "averaging/StateDownload.h"
#include "averaging/SwarmMessages.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dedloc {

class DataPlaneSecurity;
class ServiceClient;

// What a download has so far: which parts of the snapshot with this digest and layout, and the
// donors they came from.
struct PartialState {
    StateSnapshot state;
    std::string digest;
    std::uint64_t partElements = 0;
    std::vector<bool> have;           // one flag per part
    std::vector<std::string> sources; // per part, the donor that served it ("" until one did)

    // The donors that served parts so far.
    [[nodiscard]] std::set<std::string> donors() const;

    [[nodiscard]] bool any() const;
    [[nodiscard]] bool complete() const;
    // The same snapshot (digest, epoch and layout) as `info`, with at least one part fetched.
    [[nodiscard]] bool continues(const StateInfo &info) const;
    // Starts over for the snapshot `info` describes (values zero, no part).
    void reset(const StateInfo &info);
};

// A state assembled from several donors that missed its digest: its values and who served each
// part, kept until a state with that digest is verified (donorsOfOtherParts).
struct DisputedState {
    std::string digest;
    std::uint64_t partElements = 0;
    std::vector<float> values;
    std::vector<std::string> sources; // per part, as PartialState::sources
};

// The donors of the parts of `disputed` whose values differ (bit for bit) from `verified`'s, a
// state with `disputed.digest` that passed its check; none when the layouts differ.
[[nodiscard]] std::set<std::string> donorsOfOtherParts(const DisputedState &disputed, const StateSnapshot &verified);

// How one donor's part of a download ended: `why` it stopped (empty when it did its share),
// `invalid` when the donor's own answer broke the protocol (strike it), `lied` when it served a
// whole state that is not the one its digest names (ban it: no honest donor does).
struct DonorOutcome {
    DonorAdvert donor;
    std::string why;
    bool invalid = false;
    bool lied = false;
};

// A donor's answer to "state?" on a connection that stays open: the donor pinned that snapshot,
// so a download that goes on over that connection soon need not ask again. The connection is
// used by one thread at a time (it may move between threads); it closes with the last copy.
// Donors unpin a snapshot 30 s after its last request (PeerService): an offer older than
// MaxOfferAge is asked for again instead.
struct DonorOffer {
    static constexpr double MaxOfferAge = 20.0; // seconds
    DonorAdvert donor;
    StateInfo state;
    std::shared_ptr<ServiceClient> connection;
    std::chrono::steady_clock::time_point askedAt;

    [[nodiscard]] bool fresh() const
    {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - askedAt).count() < MaxOfferAge;
    }
};

// The offer of the donor with `peerId` among `offers`, or null (also when `offers` is null).
[[nodiscard]] const DonorOffer *offerOf(const std::vector<DonorOffer> *offers, const std::string &peerId);

// What `donor` offers ("state?" on a connection of its own, then `options.vouch`): the offer, or
// nothing, with `outcome` saying why.
std::optional<DonorOffer> askDonorState(const DonorAdvert &donor, const std::string &runId, long minEpoch,
                                        std::uint64_t expectedElements, const StateDownloadOptions &options,
                                        const std::atomic<bool> &stop,
                                        const std::shared_ptr<const DataPlaneSecurity> &security, DonorOutcome &outcome);

// One download from one donor, on the calling thread: over `offer`'s connection when given (it
// must be this donor's), otherwise asks "state?" (and `options.vouch`) on a new one; then fetches
// the parts `partial` lacks (all of them unless it continues the same snapshot). Returns the
// state when complete, finite and matching the digest; a state assembled with parts of other
// donors that misses it is added to `disputed` (when not null).
std::optional<StateSnapshot> downloadFrom(const DonorAdvert &donor, const std::string &runId, long minEpoch,
                                          std::uint64_t expectedElements, const StateDownloadOptions &options,
                                          const std::atomic<bool> &stop,
                                          const std::shared_ptr<const DataPlaneSecurity> &security,
                                          PartialState &partial, DonorOutcome &outcome,
                                          const DonorOffer *offer = nullptr,
                                          std::vector<DisputedState> *disputed = nullptr);

// The snapshot `target` (its epoch, layout and digest) from all of `donors` at once: each donor
// takes the next part nobody has; a part whose donor fails goes back for the others, and a donor
// that fails (or offers another state, or is not vouched for) takes no more. A donor with an
// offer in `offers` (when not null) is not asked again: its share goes over that connection. `partial` holds what arrived, for a download from one donor after this (continues()
// tells whether it may go on). Returns the state when complete, finite and matching the digest;
// `outcomes` (one per donor, in order) say how each donor ended. A complete state that misses its
// digest is added to `disputed` (when not null) if several donors served it.
std::optional<StateSnapshot> downloadFromSeveral(const std::vector<DonorAdvert> &donors, const StateInfo &target,
                                                 const std::string &runId, const StateDownloadOptions &options,
                                                 const std::atomic<bool> &stop,
                                                 const std::shared_ptr<const DataPlaneSecurity> &security,
                                                 PartialState &partial, std::vector<DonorOutcome> &outcomes,
                                                 const std::vector<DonorOffer> *offers = nullptr,
                                                 std::vector<DisputedState> *disputed = nullptr);

} // namespace dedloc
