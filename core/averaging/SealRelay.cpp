#include "averaging/SealRelay.h"

#include "averaging/ServiceClient.h"
#include "util/Clock.h"
#include "util/JsonReader.h"

#include <nlohmann/json.hpp>

namespace dedloc {

std::vector<std::uint8_t> encodeRelayedRecords(const std::vector<std::string> &values)
{
    auto array = nlohmann::json::array();
    for (const auto &v : values)
        array.push_back(nlohmann::json::binary(std::vector<std::uint8_t>(v.begin(), v.end())));
    return nlohmann::json::to_cbor(array);
}

std::vector<std::string> parseRelayedRecords(std::span<const std::uint8_t> frame)
{
    if (frame.size() > MaxRelayFrameBytes)
        throw ProtocolError("seal relay of " + std::to_string(frame.size()) + " bytes exceeds "
                            + std::to_string(MaxRelayFrameBytes));
    const auto j = parseCbor(frame, 2);
    if (j.is_discarded() || !j.is_array())
        throw ProtocolError("seal relay is not a CBOR array");
    if (j.size() > MaxRelayedRecords)
        throw ProtocolError("seal relay of " + std::to_string(j.size()) + " records exceeds "
                            + std::to_string(MaxRelayedRecords));
    std::vector<std::string> values;
    values.reserve(j.size());
    for (const auto &v : j) {
        if (!v.is_binary() || v.get_binary().empty() || v.get_binary().size() > MaxRelayedValueBytes)
            throw ProtocolError("seal relay holds something other than a record's bytes");
        values.emplace_back(v.get_binary().begin(), v.get_binary().end());
    }
    return values;
}

std::vector<std::string> sealRelayValues(const GroupRecord &seal, const std::map<std::string, GroupRecord> &book)
{
    std::vector<std::string> values;
    if (!seal.signedValue.empty())
        values.push_back(seal.signedValue);
    for (const auto &e : seal.seal) {
        std::size_t taken = 0;
        for (const auto &[peer, r] : book) {
            if (taken == RelayedRecordsPerGroup)
                break;
            if (r.epoch == seal.epoch && r.groupId == e.groupId && r.weight == e.weight && r.digest == e.digest
                && !r.signedValue.empty() && r.signedValue != seal.signedValue) {
                values.push_back(r.signedValue);
                ++taken;
            }
        }
    }
    return values;
}

std::vector<SignedRecord> askForSeal(const GroupRecord &member, const std::string &runId, long epoch,
                                     const std::string &key, double timeout, double skew, const std::atomic<bool> &stop,
                                     const std::shared_ptr<const DataPlaneSecurity> &security, std::string *why)
{
    ServiceClient client(member.serviceEndpoint, security, member.publicKey);
    client.send("seal?", {{"run", runId}, {"e", epoch}});
    const double until = unixNow() + timeout;
    while (!stop.load() && unixNow() < until) {
        const auto reply = client.receive(until - unixNow(), MaxRelayFrameBytes, &stop);
        if (!reply)
            break;
        const auto &h = reply->header;
        if (h.at("t") == "refuse") {
            *why = textOr(h, "why", "refused");
            return {};
        }
        if (h.at("t") != "seal" || integerOr(h, "e", -1) != epoch)
            continue; // an answer to another request on this connection
        std::vector<SignedRecord> records;
        try {
            const double now = unixNow();
            for (const auto &v : parseRelayedRecords(reply->data))
                if (auto r = verifySignedRecord(key, std::span(reinterpret_cast<const std::uint8_t *>(v.data()), v.size()),
                                                now, skew))
                    records.push_back(std::move(*r));
        } catch (const std::exception &e) {
            *why = e.what();
            return {};
        }
        if (records.empty())
            *why = "it relayed no record that verifies";
        return records;
    }
    *why = client.droppedReplies() > 0 ? "malformed answer: " + client.lastDropReason() : std::string("no answer");
    return {};
}

} // namespace dedloc
