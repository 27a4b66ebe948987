#include "averaging/ManifestVersions.h"

#include "net/WireMessage.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace dedloc {

namespace {

constexpr long long MaxEpoch = 1LL << 40; // as progress records bound theirs

bool isFingerprint(const std::string &s)
{
    return s.size() == 16 &&
           std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

} // namespace

std::string encodeVersionRecord(const std::string &fingerprint, long epoch)
{
    return nlohmann::json{{"m", fingerprint}, {"e", epoch}}.dump();
}

VersionRecord parseVersionRecord(const SignedRecord &record)
{
    const auto j = nlohmann::json::parse(record.payload, nullptr, false);
    if (!j.is_object())
        throw ProtocolError("version record: not a JSON object");
    const auto m = j.find("m");
    const auto e = j.find("e");
    if (m == j.end() || !m->is_string() || !isFingerprint(m->get<std::string>()))
        throw ProtocolError("version record: \"m\" is not 16 lowercase hex digits");
    if (e == j.end() || !e->is_number_integer() || e->get<long long>() < 0 || e->get<long long>() > MaxEpoch)
        throw ProtocolError("version record: \"e\" is not an epoch");
    return {record.peerId, m->get<std::string>(), static_cast<long>(e->get<long long>())};
}

OtherVersions otherVersions(const std::vector<SignedRecord> &records, const std::string &mine,
                            const std::string &selfPeerId)
{
    OtherVersions out;
    std::set<std::string> counted;
    for (const auto &record : records) {
        if (record.peerId == selfPeerId)
            continue;
        VersionRecord v;
        try {
            v = parseVersionRecord(record);
        } catch (const ProtocolError &) {
            continue; // nothing a stranger writes here changes what this peer counts
        }
        if (v.fingerprint == mine || !counted.insert(v.peerId).second)
            continue;
        ++out.peers;
        out.highestEpoch = std::max(out.highestEpoch, v.epoch);
        if (out.byFingerprint.count(v.fingerprint) || out.byFingerprint.size() < OtherVersions::MaxFingerprints)
            ++out.byFingerprint[v.fingerprint];
    }
    return out;
}

std::string describeOtherVersions(const OtherVersions &others, const std::string &mine, long myEpoch)
{
    if (others.peers == 0)
        return {};
    std::string versions;
    for (const auto &[fingerprint, peers] : others.byFingerprint)
        versions += (versions.empty() ? "" : ", ") + fingerprint + " (" + std::to_string(peers) + ")";
    const bool ahead = others.highestEpoch > myEpoch;
    return std::to_string(others.peers) +
           (others.peers == 1 ? " peer of this run trains" : " peers of this run train") +
           " under another version of its manifest (" + versions + "; this peer's is " + mine +
           (ahead ? "; they report epoch " + std::to_string(others.highestEpoch) : std::string()) +
           "): they are neither counted nor averaged with. If the lead re-signed the run, get the new manifest";
}

} // namespace dedloc
