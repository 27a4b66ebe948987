#include "averaging/StateDownload.h"

#include "averaging/DonorDownload.h"

#include "net/DataPlaneSecurity.h"
#include "util/Clock.h"
#include "util/Hash.h"
#include "util/Log.h"

#include <sodium.h>

#include <algorithm>
#include <set>

namespace dedloc {

std::vector<DonorAdvert> fetchDonors(DhtNode &dht, const std::string &runId, const std::string &selfPeerId)
{
    std::vector<DonorAdvert> out;
    for (const auto &record : dht.fetch(runKey(runId, "donors"), 3.0)) {
        if (record.peerId == selfPeerId)
            continue;
        try {
            out.push_back(parseDonorAdvert(record));
        } catch (const std::exception &e) {
            log::warning("state", "ignored a donor advert of " + record.peerId.substr(0, 8) + ": " + e.what());
        }
    }
    return out;
}

std::vector<DonorAdvert> rankDonors(std::vector<DonorAdvert> donors, long minEpoch, long maxEpoch)
{
    std::erase_if(donors, [&](const DonorAdvert &d) { return d.epoch < minEpoch || d.epoch > maxEpoch; });
    // Shuffle first (Fisher-Yates with libsodium's generator), then a stable sort by epoch keeps
    // the random order among equal epochs.
    for (std::size_t i = donors.size(); i > 1; --i)
        std::swap(donors[i - 1], donors[randombytes_uniform(static_cast<std::uint32_t>(i))]);
    std::stable_sort(donors.begin(), donors.end(), [](const DonorAdvert &a, const DonorAdvert &b) { return a.epoch > b.epoch; });
    return donors;
}

namespace {

// The donors to try, in order, and (when two or more of those asked offer the state of the
// first) those donors and that state, to fetch from all of them at once.
struct DonorPlan {
    std::vector<DonorAdvert> donors;
    std::vector<DonorAdvert> sameState;
    std::optional<StateInfo> state;
    std::vector<DonorOffer> offers; // the asked donors' open offers, to download without asking again
};

// Asks the first maxDonors donors what they offer and plans the download: first the donors
// whose (epoch, digest) another asked donor offers too, highest epoch first (two peers vouch for
// that state: one stranger serving finite garbage at a plausible epoch is not asked first),
// then the others that offered a state, in rank order, then those not asked. A donor that
// offered nothing (silent, refusing, behind) is left out, and one whose offer broke the
// protocol is also struck. `asked` counts the donors asked in vain (they use up tries).
DonorPlan corroboratedFirst(const std::vector<DonorAdvert> &ranked, const std::string &runId, long minEpoch,
                            std::uint64_t expectedElements, const StateDownloadOptions &options,
                            const std::atomic<bool> &stop, const std::shared_ptr<const DataPlaneSecurity> &security,
                            BanList *bans, std::string &last, int &asked)
{
    const std::size_t probed = std::min<std::size_t>(ranked.size(), static_cast<std::size_t>(options.maxDonors));
    if (probed < 2)
        return {ranked, {}, std::nullopt, {}};
    std::vector<std::optional<DonorOffer>> offers(probed);
    for (std::size_t i = 0; i < probed && !stop.load(); ++i) {
        DonorOutcome o;
        offers[i] = askDonorState(ranked[i], runId, minEpoch, expectedElements, options, stop, security, o);
        if (!offers[i]) {
            last = "donor " + ranked[i].peerId.substr(0, 8) + ": " + o.why;
            log::warning("state", last);
            ++asked;
        }
        if (o.invalid && bans)
            bans->strike(ranked[i].peerId, "state download: " + o.why, unixNow());
    }
    const auto same = [&](std::size_t i, std::size_t j) {
        if (!offers[i] || !offers[j])
            return false;
        const auto &a = offers[i]->state, &b = offers[j]->state;
        return !a.digest.empty() && b.digest == a.digest && b.epoch == a.epoch;
    };
    std::vector<bool> confirmed(ranked.size(), false); // another asked donor offers the same state
    for (std::size_t i = 0; i < probed; ++i)
        for (std::size_t j = 0; j < probed; ++j)
            confirmed[i] = confirmed[i] || (j != i && same(i, j));
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < ranked.size(); ++i)
        if (i >= probed || offers[i])
            order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (confirmed[a] != confirmed[b])
            return bool(confirmed[a]);
        return confirmed[a] && offers[a]->state.epoch > offers[b]->state.epoch;
    });
    DonorPlan plan;
    for (const auto i : order)
        plan.donors.push_back(ranked[i]);
    for (const auto &offer : offers)
        if (offer)
            plan.offers.push_back(*offer);
    if (!order.empty() && confirmed[order.front()]) {
        plan.state = offers[order.front()]->state;
        for (const auto i : order)
            if (i < probed && same(order.front(), i))
                plan.sameState.push_back(ranked[i]);
    }
    if (!plan.donors.empty() && plan.donors.front().peerId != ranked.front().peerId)
        log::info("state", "donor " + plan.donors.front().peerId.substr(0, 8) + " first: another donor offers the same state");
    return plan;
}

// The donors that may be asked: admitted to a closed run and not banned. `last` says why the
// last one left out was.
std::vector<DonorAdvert> askableDonors(const std::vector<DonorAdvert> &ranked,
                                       const std::shared_ptr<const DataPlaneSecurity> &security, BanList *bans,
                                       std::string &last)
{
    std::vector<DonorAdvert> out;
    for (const auto &donor : ranked) {
        if (security) {
            if (const auto reason = security->admission(donor.publicKey); !reason.empty()) {
                last = "donor " + donor.peerId.substr(0, 8) + " is not admitted to this closed run: " + reason;
                continue;
            }
        }
        if (bans && bans->isBanned(donor.peerId, unixNow())) {
            last = "donor " + donor.peerId.substr(0, 8) + " is banned";
            continue;
        }
        out.push_back(donor);
    }
    return out;
}

} // namespace

std::optional<StateSnapshot> downloadState(const std::vector<DonorAdvert> &rankedDonors, const std::string &runId,
                                           long minEpoch, std::uint64_t expectedElements,
                                           const StateDownloadOptions &options, const std::atomic<bool> &stop,
                                           std::string *why, const std::shared_ptr<const DataPlaneSecurity> &security,
                                           BanList *bans)
{
    std::string last = "no state donor at epoch " + std::to_string(minEpoch) + " or later";
    int tried = 0;
    const auto plan = corroboratedFirst(askableDonors(rankedDonors, security, bans, last), runId, minEpoch,
                                        expectedElements, options, stop, security, bans, last, tried);
    const auto failed = [&](const DonorOutcome &o) {
        last = "donor " + o.donor.peerId.substr(0, 8) + ": " + o.why;
        log::warning("state", last);
        if (o.lied && bans) // a whole state of its own that is not the one it offered
            bans->ban(o.donor.peerId, "state download: " + o.why, unixNow());
        else if (o.invalid && bans) // its own answer on a link to its key: the donor is at fault
            bans->strike(o.donor.peerId, "state download: " + o.why, unixNow());
    };
    std::vector<DisputedState> disputed; // states from several donors that missed their digest
    const auto verified = [&](const StateSnapshot &s) { // only a true copy of a disputed state judges it
        if (disputed.empty() || !bans)
            return;
        const auto digest = sha256Hex(s.values.data(), s.values.size() * sizeof(float));
        for (const auto &d : disputed)
            if (d.digest == digest)
                for (const auto &liar : donorsOfOtherParts(d, s))
                    bans->ban(liar, "state download: served parts of epoch " + std::to_string(s.epoch)
                                        + " that differ from the state of the digest it offered", unixNow());
    };
    PartialState partial; // parts fetched so far, for the next donor of the same state
    std::set<std::string> gaveUp;
    if (plan.sameState.size() >= 2 && !stop.load()) {
        log::info("state", "downloading the state of epoch " + std::to_string(plan.state->epoch) + " from "
                               + std::to_string(plan.sameState.size()) + " donors at once");
        std::vector<DonorOutcome> outcomes;
        if (auto s = downloadFromSeveral(plan.sameState, *plan.state, runId, options, stop, security, partial,
                                         outcomes, &plan.offers, &disputed)) {
            log::info("state", "downloaded state of epoch " + std::to_string(s->epoch) + " from "
                                   + std::to_string(plan.sameState.size()) + " donors");
            return s;
        }
        bool anyFailed = false;
        for (const auto &o : outcomes)
            if (!o.why.empty()) {
                failed(o);
                gaveUp.insert(o.donor.peerId);
                anyFailed = true;
            }
        if (!anyFailed && !stop.load()) // complete, yet not the state offered: one of them lied
            last = "the state assembled from " + std::to_string(plan.sameState.size())
                   + " donors does not match their digest";
    }
    for (const auto &donor : plan.donors) {
        if (stop.load() || tried >= options.maxDonors)
            break;
        if (gaveUp.count(donor.peerId))
            continue;
        ++tried;
        DonorOutcome outcome;
        if (auto s = downloadFrom(donor, runId, minEpoch, expectedElements, options, stop, security, partial, outcome,
                                  offerOf(&plan.offers, donor.peerId), &disputed)) {
            log::info("state", "downloaded state of epoch " + std::to_string(s->epoch) + " from "
                                   + donor.peerId.substr(0, 8));
            verified(*s);
            return s;
        }
        failed(outcome);
    }
    if (why)
        *why = last;
    return std::nullopt;
}

} // namespace dedloc
