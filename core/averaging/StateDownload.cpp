#include "averaging/StateDownload.h"

#include "net/DataPlaneSecurity.h"
#include "averaging/ServiceClient.h"
#include "util/Clock.h"
#include "util/Log.h"

#include <sodium.h>

#include <algorithm>
#include <cmath>
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

std::vector<DonorAdvert> rankDonors(std::vector<DonorAdvert> donors, long minEpoch)
{
    std::erase_if(donors, [&](const DonorAdvert &d) { return d.epoch < minEpoch; });
    // Shuffle first (Fisher-Yates with libsodium's generator), then a stable sort by epoch keeps
    // the random order among equal epochs.
    for (std::size_t i = donors.size(); i > 1; --i)
        std::swap(donors[i - 1], donors[randombytes_uniform(static_cast<std::uint32_t>(i))]);
    std::stable_sort(donors.begin(), donors.end(), [](const DonorAdvert &a, const DonorAdvert &b) { return a.epoch > b.epoch; });
    return donors;
}

namespace {

std::optional<StateSnapshot> downloadFrom(const DonorAdvert &donor, const std::string &runId, long minEpoch,
                                          std::uint64_t expectedElements, const StateDownloadOptions &options,
                                          const std::atomic<bool> &stop, std::string &why, bool &invalid,
                                          const std::shared_ptr<const DataPlaneSecurity> &security)
{
    ServiceClient client(donor.serviceEndpoint, security, donor.publicKey);
    client.send("state?", {{"run", runId}});
    auto reply = client.receive(options.partTimeout);
    if (!reply && client.refusedAtHandshake()) {
        why = "donor refused the encrypted handshake";
        return std::nullopt;
    }
    if (!reply) {
        why = "donor did not answer";
        return std::nullopt;
    }
    if (reply->header.at("t") != "state") {
        why = "donor refused: " + reply->header.value("why", std::string("?"));
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
    StateSnapshot s;
    s.epoch = info.epoch;
    s.values.resize(info.elements);
    for (std::uint32_t k = 0; k < info.parts; ++k) {
        if (stop.load()) {
            why = "stopped";
            return std::nullopt;
        }
        const std::uint64_t offset = k * info.partElements;
        const std::uint64_t count = std::min<std::uint64_t>(info.partElements, info.elements - offset);
        client.send("part?", {{"i", info.snapshotId}, {"k", k}});
        std::optional<ServiceReply> part;
        while ((part = client.receive(options.partTimeout, count * sizeof(float)))) {
            if (part->header.at("t") == "part" && part->header.value("i", std::string()) == info.snapshotId
                && part->header.value("k", -1L) == static_cast<long>(k))
                break;
            if (part->header.at("t") == "refuse") {
                why = "donor stopped serving: " + part->header.value("why", std::string("?"));
                return std::nullopt;
            }
        }
        if (!part) {
            why = "no progress for " + std::to_string(static_cast<int>(options.partTimeout)) + " s at part "
                  + std::to_string(k) + " of " + std::to_string(info.parts);
            return std::nullopt;
        }
        if (part->data.size() != count * sizeof(float)) {
            why = "part " + std::to_string(k) + " has " + std::to_string(part->data.size()) + " bytes, expected "
                  + std::to_string(count * sizeof(float));
            invalid = true;
            return std::nullopt;
        }
        std::memcpy(s.values.data() + offset, part->data.data(), part->data.size());
    }
    for (float x : s.values)
        if (!std::isfinite(x)) {
            why = "state holds non-finite values";
            invalid = true;
            return std::nullopt;
        }
    return s;
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
    for (const auto &donor : rankedDonors) {
        if (stop.load() || tried++ >= options.maxDonors)
            break;
        std::string reason;
        if (security) {
            reason = security->admission(donor.publicKey);
            if (!reason.empty()) {
                last = "donor " + donor.peerId.substr(0, 8) + " is not admitted to this closed run: " + reason;
                --tried;
                continue;
            }
        }
        if (bans && bans->isBanned(donor.peerId, unixNow())) {
            last = "donor " + donor.peerId.substr(0, 8) + " is banned";
            --tried;
            continue;
        }
        bool invalid = false;
        if (auto s = downloadFrom(donor, runId, minEpoch, expectedElements, options, stop, reason, invalid, security)) {
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
