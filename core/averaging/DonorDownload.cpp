#include "averaging/DonorDownload.h"

#include "averaging/ServiceClient.h"
#include "util/Clock.h"
#include "util/Hash.h"
#include "util/Log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

namespace dedloc {

bool PartialState::any() const
{
    return std::find(have.begin(), have.end(), true) != have.end();
}

std::set<std::string> PartialState::donors() const
{
    std::set<std::string> out;
    for (const auto &s : sources)
        if (!s.empty())
            out.insert(s);
    return out;
}

std::set<std::string> donorsOfOtherParts(const DisputedState &disputed, const StateSnapshot &verified)
{
    std::set<std::string> out;
    const auto n = disputed.values.size();
    if (verified.values.size() != n || disputed.partElements == 0)
        return out;
    for (std::size_t k = 0; k < disputed.sources.size(); ++k) {
        const auto first = std::min<std::uint64_t>(k * disputed.partElements, n);
        const auto count = std::min<std::uint64_t>(disputed.partElements, n - first);
        if (std::memcmp(disputed.values.data() + first, verified.values.data() + first, count * sizeof(float)) != 0
            && !disputed.sources[k].empty())
            out.insert(disputed.sources[k]);
    }
    return out;
}

bool PartialState::complete() const
{
    return !have.empty() && std::find(have.begin(), have.end(), false) == have.end();
}

bool PartialState::continues(const StateInfo &info) const
{
    return any() && !digest.empty() && info.digest == digest && info.epoch == state.epoch
           && info.partElements == partElements && info.elements == state.values.size() && info.parts == have.size();
}

void PartialState::reset(const StateInfo &info)
{
    *this = PartialState{{info.epoch, std::vector<float>(info.elements)}, info.digest, info.partElements,
                         std::vector<bool>(info.parts, false), std::vector<std::string>(info.parts)};
}

namespace {

// One donor's session: `why` says why it failed; `invalid` that the donor's own answer broke
// the protocol (it is then struck), as opposed to silence, a refusal or an old state.
struct DonorSession {
    std::shared_ptr<ServiceClient> connection;
    ServiceClient &client; // *connection (on the heap: stays put when a session is moved)
    const StateDownloadOptions &options;
    const std::atomic<bool> &stop;
    std::string why;
    bool invalid = false;

    // A new connection to `donor`.
    DonorSession(const DonorAdvert &donor, const StateDownloadOptions &options, const std::atomic<bool> &stop,
                 const std::shared_ptr<const DataPlaneSecurity> &security)
        : DonorSession(std::make_shared<ServiceClient>(donor.serviceEndpoint, security, donor.publicKey), options, stop)
    {
    }
    // Goes on over an open connection.
    DonorSession(std::shared_ptr<ServiceClient> open, const StateDownloadOptions &options, const std::atomic<bool> &stop)
        : connection(std::move(open)), client(*connection), options(options), stop(stop)
    {
    }

    std::optional<StateInfo> askState(const std::string &runId, long minEpoch, std::uint64_t expectedElements);
    // askState, then options.vouch for `donorId`'s offer.
    std::optional<StateInfo> askVouched(const std::string &donorId, const std::string &runId, long minEpoch,
                                        std::uint64_t expectedElements);
    bool fetchPart(const StateInfo &info, std::uint32_t k, StateSnapshot &s);
    // Nothing came: a stop, silence, or (invalid) replies the client dropped as malformed.
    void noReply(int droppedBefore, const std::string &silence);
};

void DonorSession::noReply(int droppedBefore, const std::string &silence)
{
    if (stop.load()) {
        why = "stopped";
    } else if (client.droppedReplies() > droppedBefore) {
        why = "malformed answer: " + client.lastDropReason();
        invalid = true;
    } else {
        why = silence;
    }
}

std::optional<StateInfo> DonorSession::askState(const std::string &runId, long minEpoch, std::uint64_t expectedElements)
{
    const int dropped = client.droppedReplies();
    client.send("state?", {{"run", runId}});
    auto reply = client.receive(options.partTimeout, 0, &stop);
    if (!reply) {
        noReply(dropped, client.refusedAtHandshake() ? "donor refused the encrypted handshake" : "donor did not answer");
        return std::nullopt;
    }
    if (reply->header.at("t") != "state") {
        why = "donor refused: " + textOr(reply->header, "why", "?");
        return std::nullopt;
    }
    StateInfo info;
    try {
        info = stateInfoFromJson(reply->header, expectedElements);
    } catch (const std::exception &e) {
        why = std::string("donor offered a bad state: ") + e.what();
        invalid = true;
        return std::nullopt;
    }
    if (info.epoch < minEpoch) {
        why = "donor's state is at epoch " + std::to_string(info.epoch) + ", behind " + std::to_string(minEpoch);
        return std::nullopt;
    }
    if (info.epoch > options.maxEpoch) {
        why = "donor claims epoch " + std::to_string(info.epoch) + ", beyond the swarm's "
              + std::to_string(options.maxEpoch);
        return std::nullopt;
    }
    return info;
}

std::optional<StateInfo> DonorSession::askVouched(const std::string &donorId, const std::string &runId, long minEpoch,
                                                  std::uint64_t expectedElements)
{
    auto info = askState(runId, minEpoch, expectedElements);
    if (info && options.vouch) {
        if (auto w = options.vouch(donorId, info->epoch, info->digest); !w.empty()) {
            why = "not vouched for: " + w;
            return std::nullopt;
        }
    }
    return info;
}

// A session with `donor` and the state it offers: over `offer`'s connection when given,
// otherwise asked (and vouched for) on a new one.
std::pair<DonorSession, std::optional<StateInfo>>
openSession(const DonorAdvert &donor, const DonorOffer *offer, const std::string &runId, long minEpoch,
            std::uint64_t expectedElements, const StateDownloadOptions &options, const std::atomic<bool> &stop,
            const std::shared_ptr<const DataPlaneSecurity> &security)
{
    if (offer && offer->connection && offer->donor.peerId == donor.peerId && offer->fresh())
        return {DonorSession(offer->connection, options, stop), offer->state};
    DonorSession d(donor, options, stop, security);
    auto info = d.askVouched(donor.peerId, runId, minEpoch, expectedElements);
    return {std::move(d), info};
}

// Writes part k into s.values (parts are disjoint: sessions on several threads may fill one
// state at once).
bool DonorSession::fetchPart(const StateInfo &info, std::uint32_t k, StateSnapshot &s)
{
    const std::uint64_t offset = k * info.partElements;
    const std::uint64_t count = std::min<std::uint64_t>(info.partElements, info.elements - offset);
    const int dropped = client.droppedReplies();
    client.send("part?", {{"i", info.snapshotId}, {"k", k}});
    // One deadline for the part, from the request: replies for other parts (stale answers of
    // earlier requests, or a donor that sends nothing else) do not extend it.
    const double until = unixNow() + options.partTimeout;
    std::optional<ServiceReply> part;
    while ((part = client.receive(until - unixNow(), count * sizeof(float), &stop))) {
        const auto &h = part->header;
        if (h.at("t") == "part" && textOr(h, "i", "") == info.snapshotId && integerOr(h, "k", -1) == static_cast<long>(k))
            break;
        if (h.at("t") == "refuse") {
            why = "donor stopped serving: " + textOr(h, "why", "?");
            return false;
        }
    }
    if (!part) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%.3g", options.partTimeout);
        noReply(dropped, std::string("no progress for ") + seconds + " s at part " + std::to_string(k) + " of "
                             + std::to_string(info.parts));
        return false;
    }
    if (part->data.size() != count * sizeof(float)) {
        why = "part " + std::to_string(k) + " has " + std::to_string(part->data.size()) + " bytes, expected "
              + std::to_string(count * sizeof(float));
        invalid = true;
        return false;
    }
    std::memcpy(s.values.data() + offset, part->data.data(), part->data.size());
    return true;
}

// The assembled state matches the digest the donors gave, when they gave one, and holds only
// finite values. A mismatch from one donor proves it `lied`; from several, the state is added to
// `disputed` (when not null), leaving `p` empty. A state that matches its digest but holds
// non-finite values is what its donors hold: `invalid` for a lone donor (a strike, as before
// digests), nobody's fault to judge among several. `why` says what failed.
bool checkAssembled(PartialState &p, std::string &why, bool &lied, bool &invalid, std::vector<DisputedState> *disputed)
{
    const auto donors = p.donors();
    if (!p.digest.empty() && sha256Hex(p.state.values.data(), p.state.values.size() * sizeof(float)) != p.digest) {
        why = "state does not match the digest its donor gave";
    } else if (!std::all_of(p.state.values.begin(), p.state.values.end(), [](float x) { return std::isfinite(x); })) {
        why = "state holds non-finite values";
        invalid = donors.size() <= 1;
        return false;
    } else {
        return true;
    }
    if (donors.size() > 1) {
        why += " (its parts came from " + std::to_string(donors.size()) + " donors: blamed once a true copy is had)";
        if (disputed)
            disputed->push_back({p.digest, p.partElements, std::move(p.state.values), std::move(p.sources)});
    } else {
        lied = true;
    }
    return false;
}

bool sameSnapshot(const StateInfo &a, const StateInfo &b)
{
    return a.epoch == b.epoch && a.digest == b.digest && a.elements == b.elements && a.parts == b.parts
           && a.partElements == b.partElements;
}

// The parts of a download shared by several sessions: each takes the next part nobody holds.
class PartBoard {
  public:
    explicit PartBoard(PartialState &partial) : m_partial(partial), m_taken(partial.have.size(), false) {}
    std::optional<std::uint32_t> take()
    {
        std::lock_guard lock(m_mutex);
        for (std::uint32_t k = 0; k < m_taken.size(); ++k)
            if (!m_taken[k] && !m_partial.have[k]) {
                m_taken[k] = true;
                return k;
            }
        return std::nullopt;
    }
    void done(std::uint32_t k, const std::string &source)
    {
        std::lock_guard lock(m_mutex);
        m_partial.have[k] = true;
        m_partial.sources[k] = source;
    }
    void giveBack(std::uint32_t k)
    {
        std::lock_guard lock(m_mutex);
        m_taken[k] = false;
    }

  private:
    std::mutex m_mutex;
    PartialState &m_partial;
    std::vector<bool> m_taken;
};

// One donor's share of a download from several: its offer (asked now unless given: the snapshot
// it pins), then parts from the board until none is left or it fails.
void serveShare(const DonorAdvert &donor, const DonorOffer *offer, const StateInfo &target, const std::string &runId,
                const StateDownloadOptions &options, const std::atomic<bool> &stop,
                const std::shared_ptr<const DataPlaneSecurity> &security, PartBoard &board, StateSnapshot &state,
                DonorOutcome &outcome)
{
    auto [d, info] = openSession(donor, offer, runId, target.epoch, target.elements, options, stop, security);
    if (info && !sameSnapshot(*info, target)) {
        d.why = "donor now offers another state (epoch " + std::to_string(info->epoch) + ")";
        info.reset();
    }
    while (info) {
        const auto k = board.take();
        if (!k)
            break;
        if (stop.load()) {
            board.giveBack(*k);
            d.why = "stopped";
            break;
        }
        if (!d.fetchPart(*info, *k, state)) {
            board.giveBack(*k);
            break;
        }
        board.done(*k, donor.peerId);
    }
    outcome = {donor, d.why, d.invalid};
}

} // namespace

const DonorOffer *offerOf(const std::vector<DonorOffer> *offers, const std::string &peerId)
{
    if (!offers)
        return nullptr;
    const auto it = std::find_if(offers->begin(), offers->end(), [&](const DonorOffer &o) { return o.donor.peerId == peerId; });
    return it == offers->end() ? nullptr : &*it;
}

std::optional<DonorOffer> askDonorState(const DonorAdvert &donor, const std::string &runId, long minEpoch,
                                        std::uint64_t expectedElements, const StateDownloadOptions &options,
                                        const std::atomic<bool> &stop,
                                        const std::shared_ptr<const DataPlaneSecurity> &security, DonorOutcome &outcome)
{
    DonorSession d(donor, options, stop, security);
    const auto askedAt = std::chrono::steady_clock::now(); // the donor's pin starts with "state?", before the vouching
    const auto info = d.askVouched(donor.peerId, runId, minEpoch, expectedElements);
    outcome = {donor, d.why, d.invalid};
    if (!info)
        return std::nullopt;
    return DonorOffer{donor, *info, d.connection, askedAt};
}

std::optional<StateSnapshot> downloadFrom(const DonorAdvert &donor, const std::string &runId, long minEpoch,
                                          std::uint64_t expectedElements, const StateDownloadOptions &options,
                                          const std::atomic<bool> &stop,
                                          const std::shared_ptr<const DataPlaneSecurity> &security,
                                          PartialState &partial, DonorOutcome &outcome, const DonorOffer *offer,
                                          std::vector<DisputedState> *disputed)
{
    auto [d, info] = openSession(donor, offer, runId, minEpoch, expectedElements, options, stop, security);
    std::optional<StateSnapshot> result;
    if (info) {
        if (partial.continues(*info)) {
            const auto held = std::count(partial.have.begin(), partial.have.end(), true);
            log::info("state", "resuming the download of epoch " + std::to_string(info->epoch) + " with "
                                   + std::to_string(held) + " of " + std::to_string(info->parts) + " parts from "
                                   + donor.peerId.substr(0, 8) + " (the same state)");
        } else {
            partial.reset(*info);
        }
        for (std::uint32_t k = 0; k < info->parts; ++k) {
            if (partial.have[k])
                continue;
            if (stop.load()) {
                d.why = "stopped";
                break;
            }
            if (!d.fetchPart(*info, k, partial.state))
                break;
            partial.have[k] = true;
            partial.sources[k] = donor.peerId;
        }
        if (partial.complete()) {
            bool lied = false, invalid = false;
            if (checkAssembled(partial, d.why, lied, invalid, disputed))
                result = std::move(partial.state);
            partial = {};
            outcome = {donor, d.why, lied || invalid, lied};
            return result;
        }
    }
    outcome = {donor, d.why, d.invalid};
    return result;
}

std::optional<StateSnapshot> downloadFromSeveral(const std::vector<DonorAdvert> &donors, const StateInfo &target,
                                                 const std::string &runId, const StateDownloadOptions &options,
                                                 const std::atomic<bool> &stop,
                                                 const std::shared_ptr<const DataPlaneSecurity> &security,
                                                 PartialState &partial, std::vector<DonorOutcome> &outcomes,
                                                 const std::vector<DonorOffer> *offers,
                                                 std::vector<DisputedState> *disputed)
{
    if (!partial.continues(target))
        partial.reset(target);
    outcomes.assign(donors.size(), {});
    PartBoard board(partial);
    {
        std::vector<std::jthread> shares;
        for (std::size_t i = 0; i < donors.size(); ++i)
            shares.emplace_back([&, i] {
                serveShare(donors[i], offerOf(offers, donors[i].peerId), target, runId, options, stop, security, board, partial.state, outcomes[i]);
            });
    }
    if (!partial.complete())
        return std::nullopt;
    std::string why;
    bool lied = false, invalid = false;
    const auto served = partial.donors();
    std::optional<StateSnapshot> result;
    if (checkAssembled(partial, why, lied, invalid, disputed)) {
        result = std::move(partial.state);
    } else {
        for (auto &o : outcomes) // one donor served it all: that one is at fault
            if ((lied || invalid) && served.count(o.donor.peerId)) {
                o.why = why;
                o.invalid = true;
                o.lied = lied;
            }
        if (!lied && !invalid)
            log::warning("state", why + "; downloading again from one donor at a time");
    }
    partial = {};
    return result;
}

} // namespace dedloc
