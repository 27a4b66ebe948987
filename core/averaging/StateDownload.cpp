#include "averaging/StateDownload.h"

#include "net/DataPlaneSecurity.h"
#include "averaging/ServiceClient.h"
#include "util/Clock.h"
#include "util/Hash.h"
#include "util/Log.h"

#include <sodium.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

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

// One download from one donor. `why` says why it failed; `invalid` that the donor's own answer
// broke the protocol (it is then struck), as opposed to silence, a refusal or an old state.
struct DonorDownload {
    ServiceClient &client;
    const StateDownloadOptions &options;
    const std::atomic<bool> &stop;
    std::string why;
    bool invalid = false;

    std::optional<StateInfo> askState(const std::string &runId, long minEpoch, std::uint64_t expectedElements);
    bool fetchPart(const StateInfo &info, std::uint32_t k, StateSnapshot &s);
    // Nothing came: a stop, silence, or (invalid) replies the client dropped as malformed.
    void noReply(int droppedBefore, const std::string &silence);
};

void DonorDownload::noReply(int droppedBefore, const std::string &silence)
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

std::optional<StateInfo> DonorDownload::askState(const std::string &runId, long minEpoch, std::uint64_t expectedElements)
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

bool DonorDownload::fetchPart(const StateInfo &info, std::uint32_t k, StateSnapshot &s)
{
    const std::uint64_t offset = k * info.partElements;
    const std::uint64_t count = std::min<std::uint64_t>(info.partElements, info.elements - offset);
    const int dropped = client.droppedReplies();
    client.send("part?", {{"i", info.snapshotId}, {"k", k}});
    std::optional<ServiceReply> part;
    while ((part = client.receive(options.partTimeout, count * sizeof(float), &stop))) {
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

// What a download has so far: the parts before `next` of the snapshot with this digest. Another
// donor offering the same digest (and layout) goes on from `next` instead of from the start.
struct PartialState {
    StateSnapshot state;
    std::string digest;
    std::uint64_t partElements = 0;
    std::uint32_t next = 0;

    [[nodiscard]] bool continues(const StateInfo &info) const
    {
        return next > 0 && !digest.empty() && info.digest == digest && info.epoch == state.epoch
               && info.partElements == partElements && info.elements == state.values.size();
    }
};

// The assembled state holds only finite values and, when the donor gave a digest, matches it.
bool checkAssembled(DonorDownload &d, const PartialState &p)
{
    if (!std::all_of(p.state.values.begin(), p.state.values.end(), [](float x) { return std::isfinite(x); }))
        d.why = "state holds non-finite values";
    else if (!p.digest.empty() && sha256Hex(p.state.values.data(), p.state.values.size() * sizeof(float)) != p.digest)
        d.why = "state does not match the digest its donor gave";
    else
        return true;
    d.invalid = true;
    return false;
}

std::optional<StateSnapshot> downloadFrom(const DonorAdvert &donor, const std::string &runId, long minEpoch,
                                          std::uint64_t expectedElements, const StateDownloadOptions &options,
                                          const std::atomic<bool> &stop, std::string &why, bool &invalid,
                                          const std::shared_ptr<const DataPlaneSecurity> &security, PartialState &partial)
{
    ServiceClient client(donor.serviceEndpoint, security, donor.publicKey);
    DonorDownload d{client, options, stop, {}, false};
    std::optional<StateSnapshot> result;
    auto info = d.askState(runId, minEpoch, expectedElements);
    if (info && options.vouch) {
        if (auto w = options.vouch(donor.peerId, info->epoch, info->digest); !w.empty()) {
            d.why = "not vouched for: " + w;
            info.reset();
        }
    }
    if (info) {
        if (partial.continues(*info)) {
            log::info("state", "resuming the download of epoch " + std::to_string(info->epoch) + " at part "
                                   + std::to_string(partial.next) + " of " + std::to_string(info->parts) + " from "
                                   + donor.peerId.substr(0, 8) + " (the same state)");
        } else {
            partial = PartialState{{info->epoch, std::vector<float>(info->elements)}, info->digest, info->partElements, 0};
        }
        while (partial.next < info->parts) {
            if (stop.load()) {
                d.why = "stopped";
                break;
            }
            if (!d.fetchPart(*info, partial.next, partial.state))
                break;
            ++partial.next;
        }
        const bool complete = partial.next == info->parts;
        if (complete && checkAssembled(d, partial))
            result = std::move(partial.state);
        if (complete)
            partial = {};
    }
    why = d.why;
    invalid = d.invalid;
    return result;
}

// Asks the first maxDonors donors what they offer and returns the donors to try: first those
// whose (epoch, digest) another asked donor offers too, highest epoch first (two peers vouch for
// that state: one stranger serving finite garbage at a plausible epoch is not asked first),
// then the others that offered a state, in rank order, then those not asked. A donor that
// offered nothing (silent, refusing, behind) is left out, and one whose offer broke the
// protocol is also struck. `asked` counts the donors asked in vain (they use up tries).
std::vector<DonorAdvert> corroboratedFirst(const std::vector<DonorAdvert> &ranked, const std::string &runId,
                                          long minEpoch,
                                          std::uint64_t expectedElements, const StateDownloadOptions &options,
                                          const std::atomic<bool> &stop,
                                          const std::shared_ptr<const DataPlaneSecurity> &security, BanList *bans,
                                          std::string &last, int &asked)
{
    const std::size_t probed = std::min<std::size_t>(ranked.size(), static_cast<std::size_t>(options.maxDonors));
    if (probed < 2)
        return ranked;
    std::vector<std::optional<StateInfo>> offers(probed);
    for (std::size_t i = 0; i < probed && !stop.load(); ++i) {
        ServiceClient client(ranked[i].serviceEndpoint, security, ranked[i].publicKey);
        DonorDownload d{client, options, stop, {}, false};
        offers[i] = d.askState(runId, minEpoch, expectedElements);
        if (!offers[i]) {
            last = "donor " + ranked[i].peerId.substr(0, 8) + ": " + d.why;
            log::warning("state", last);
            ++asked;
        }
        if (d.invalid && bans)
            bans->strike(ranked[i].peerId, "state download: " + d.why, unixNow());
    }
    std::vector<bool> confirmed(ranked.size(), false); // another asked donor offers the same state
    for (std::size_t i = 0; i < probed; ++i)
        for (std::size_t j = 0; j < probed; ++j)
            if (j != i && offers[i] && offers[j] && !offers[i]->digest.empty() && offers[j]->digest == offers[i]->digest
                && offers[j]->epoch == offers[i]->epoch)
                confirmed[i] = true;
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < ranked.size(); ++i)
        if (i >= probed || offers[i])
            order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (confirmed[a] != confirmed[b])
            return bool(confirmed[a]);
        return confirmed[a] && offers[a]->epoch > offers[b]->epoch;
    });
    std::vector<DonorAdvert> out;
    for (const auto i : order)
        out.push_back(ranked[i]);
    if (!out.empty() && out.front().peerId != ranked.front().peerId)
        log::info("state", "donor " + out.front().peerId.substr(0, 8) + " first: another donor offers the same state");
    return out;
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
    const auto donors = corroboratedFirst(askableDonors(rankedDonors, security, bans, last), runId, minEpoch,
                                          expectedElements, options, stop, security, bans, last, tried);
    PartialState partial; // parts fetched from donors that failed, for the next with the same state
    for (const auto &donor : donors) {
        if (stop.load() || tried++ >= options.maxDonors)
            break;
        std::string reason;
        bool invalid = false;
        if (auto s = downloadFrom(donor, runId, minEpoch, expectedElements, options, stop, reason, invalid, security,
                                  partial)) {
            log::info("state", "downloaded state of epoch " + std::to_string(s->epoch) + " from "
                                   + donor.peerId.substr(0, 8));
            return s;
        }
        last = "donor " + donor.peerId.substr(0, 8) + ": " + reason;
        log::warning("state", last);
        if (invalid && bans) // its own answer on a link to its key: the donor is at fault
            bans->strike(donor.peerId, "state download: " + reason, unixNow());
    }
    if (why)
        *why = last;
    return std::nullopt;
}

} // namespace dedloc
