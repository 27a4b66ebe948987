// Seeds of the swarm's formats: data-plane headers, service messages, averaged updates, DHT
// payloads and signed DHT records.
#include "FuzzFixtures.h"
#include "MakeSeeds.h"

#include "averaging/ManifestVersions.h"
#include "averaging/SealRelay.h"
#include "averaging/SketchRecord.h"
#include "averaging/SwarmMessages.h"
#include "averaging/UpdateArchive.h"
#include "net/DhtNode.h"
#include "monitor/CreditLedger.h"
#include "net/PeerIdentity.h"
#include "util/Hash.h"

#include <nlohmann/json.hpp>

namespace dedloc::fuzz {

namespace {

using nlohmann::json;

std::string hexKey(const PeerIdentity &id) { return toHex(id.publicKey().data(), id.publicKey().size()); }

std::vector<Seed> shardHeaderSeeds()
{
    ShardHeader h{MessageType::Part, "fuzz-group", 1, 2, 1, 4, 250, 250, 16.0, Compression::Fp16};
    ShardHeader r = h;
    r.type = MessageType::Result;
    r.weight = 48.0;
    return {seedOf("ShardHeader", "part.cbor", encodeShardHeader(h)),
            seedOf("ShardHeader", "result.cbor", encodeShardHeader(r))};
}

// The Payload target's input: the codec's index in FuzzPayload.cpp's list, the count, the bytes.
Seed payloadSeed(const char *name, std::uint8_t codecIndex, Compression codec, const std::vector<float> &values)
{
    std::vector<std::uint8_t> in{codecIndex, static_cast<std::uint8_t>(values.size() & 0xff),
                                 static_cast<std::uint8_t>(values.size() >> 8)};
    const auto bytes = encode(codec, values);
    in.insert(in.end(), bytes.begin(), bytes.end());
    return seedOf("Payload", name, in);
}

std::vector<Seed> payloadSeeds()
{
    std::vector<float> values(5000);
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = static_cast<float>((i * 7919) % 201) / 100.0F - 1.0F;
    return {payloadSeed("fp16.bin", 1, Compression::Fp16, std::vector<float>(values.begin(), values.begin() + 300)),
            payloadSeed("blockwise8bit.bin", 3, Compression::Blockwise8Bit, values),
            payloadSeed("topk4bit.bin", 5, Compression::TopK4Bit, values),
            payloadSeed("sparse_fp16.bin", 6, Compression::SparseFp16, [&] {
                std::vector<float> sparse(values.size(), 0.0F);
                for (std::size_t i = 0; i < sparse.size(); i += 37)
                    sparse[i] = values[i];
                return sparse;
            }())};
}

json groupMessage(const PeerIdentity &a, const PeerIdentity &b)
{
    GroupInfo g{"group-1", UpdateEpoch, {}};
    g.members.push_back({a.peerId(), "tcp://127.0.0.1:5555", 100.0, 1.0, a.publicKey(), ShardShareTotal, false});
    g.members.push_back({b.peerId(), "", 0.0, 1.0, b.publicKey(), 0, true});
    return groupToJson(g);
}

std::vector<Seed> serviceSeeds()
{
    const auto a = PeerIdentity::generate(), b = PeerIdentity::generate();
    JoinRequest join{RunId, UpdateEpoch, "schema", a.peerId(), "tcp://127.0.0.1:5555", 100.0, false, true, a.publicKey(), false, 3};
    Declaration leader{b.peerId(), UpdateEpoch, "schema", "tcp://127.0.0.1:6000", Now + 10, false, b.publicKey()};
    const StateInfo state{"snap-1", UpdateEpoch, ModelElements, 4, 250, std::string(64, 'a')};
    const auto message = [](const char *name, const char *type, const json &fields) {
        return seedOf("ServiceMessage", name, encodeServiceMessage(type, fields));
    };
    return {message("join.cbor", "join", joinToJson(join)),
            message("begin.cbor", "begin", groupMessage(a, b)),
            message("state.cbor", "state", stateInfoToJson(state)),
            message("reach.cbor", "reach?", reachRequestToJson({a.peerId(), a.publicKey(), "tcp://10.0.0.1:7000"})),
            message("disband.cbor", "disband", {{"why", "merging"}, {"l", suggestedLeaderToJson(leader)}}),
            message("accept.cbor", "accept", {{"d", Now + 5}}),
            message("refuse.cbor", "refuse", {{"why", "group is full"}}),
            message("part.cbor", "part?", {{"i", "snap-1"}, {"k", 2}}),
            message("ping.cbor", "ping", json::object())};
}

// The target's input: the header's length (2 bytes, little-endian), the header, the data.
std::vector<std::uint8_t> updateInput(const char *type, const json &fields, std::size_t dataBytes)
{
    const auto cbor = encodeServiceMessage(type, fields);
    std::vector<std::uint8_t> out{static_cast<std::uint8_t>(cbor.size() & 0xff), static_cast<std::uint8_t>(cbor.size() >> 8)};
    out.insert(out.end(), cbor.begin(), cbor.end());
    out.resize(out.size() + dataBytes, 0x3c);
    return out;
}

std::vector<Seed> updateSeeds()
{
    std::vector<float> values(ModelElements, 0.25f);
    std::vector<EncodedPiece> pieces{{0, 400, encode(Compression::Fp16, std::span(values).first(400))},
                                     {400, 600, encode(Compression::Fp16, std::span(values).subspan(400))}};
    const auto u = *assembleUpdate(UpdateEpoch, 64, Compression::Fp16, ModelElements, std::move(pieces));
    std::vector<float> sparse(ModelElements, 0.0F);
    for (std::size_t i = 0; i < sparse.size(); i += 13)
        sparse[i] = 0.5F;
    std::vector<EncodedPiece> sparsePieces{{0, ModelElements, encode(Compression::SparseFp16, sparse)}};
    const auto s = *assembleUpdate(UpdateEpoch, 64, Compression::SparseFp16, ModelElements, std::move(sparsePieces));
    return {seedOf("UpdateHeader", "update.bin", updateInput("update", updateHeaderToJson(u), u.bytes.size())),
            seedOf("UpdateHeader", "update-sparse.bin", updateInput("update", updateHeaderToJson(s), s.bytes.size())),
            seedOf("UpdateHeader", "update-request.bin", updateInput("update?", {{"run", RunId}, {"e", UpdateEpoch}}, 0)),
            seedOf("UpdateHeader", "upart-request.bin", updateInput("upart?", {{"e", UpdateEpoch}, {"k", 0}}, 0))};
}

std::vector<Seed> dhtSeeds()
{
    ProgressRecord p;
    p.epoch = UpdateEpoch;
    p.samplesAccumulated = 40;
    p.samplesPerSecond = 12.5;
    p.accessToken = "dlt1.token";
    p.syncing = true;
    const Declaration d{"", UpdateEpoch, "schema", "tcp://127.0.0.1:6000", Now + 10, false, {}};
    const DonorAdvert advert{"", "tcp://127.0.0.1:6001", UpdateEpoch, {}, true};
    const auto identity = PeerIdentity::generate();
    const DhtNode node(identity);
    const auto record = node.encodeRecord(DhtKey, encodeProgress(p), 1796169600000ULL, Now, Now + 60);
    GroupRecord announced;
    announced.epoch = UpdateEpoch;
    announced.groupId = "e3-0123456789abcdef";
    announced.members = 4;
    GroupRecord sealed = announced;
    sealed.weight = 64;
    sealed.digest = std::string(64, 'a');
    sealed.serviceEndpoint = "tcp://127.0.0.1:6002";
    sealed.seal = {{announced.groupId, 64, sealed.digest}, {"e3-fedcba9876543210", 32, std::string(64, 'b')}};
    const auto relayed = encodeRelayedRecords(
        {node.encodeRecord(GroupsKey, encodeGroupRecord(sealed), 1796169600001ULL, Now, Now + 60),
         node.encodeRecord(GroupsKey, encodeGroupRecord(announced), 1796169600000ULL, Now, Now + 60)});
    CheckRecord check{"", UpdateEpoch, announced.groupId, 4, sealed.digest, {}, false};
    ShardSketch sketch;
    sketch.shard = 1;
    sketch.residual.fill(0.25);
    sketch.spread = sketch.weight = sketch.maxWeight = 16.0;
    sketch.groupWeight = 64.0;
    sketch.radius = sketch.distance = 2.0;
    sketch.far = {3};
    check.sketches.own = {sketch};
    check.sketches.view = {{0, sketch}, {2, sketch}};
    MonitorCredit credit;
    credit.samples = 640;
    credit.steps = 10;
    credit.ranges = {{1, 4}, {7, 12}};
    const nlohmann::json metrics = {{"step", 12},        {"loss", 7.5},      {"samples", 64},
                                    {"averaged", true},  {"rss_mib", 512.0}, {"event", "step"},
                                    {"group_size", 4},   {"epoch", 12}};
    return {seedOf("DhtPayload", "progress.json", encodeProgress(p)),
            seedOf("DhtPayload", "declaration.json", encodeDeclaration(d)),
            seedOf("DhtPayload", "donor.json", encodeDonorAdvert(advert)),
            seedOf("DhtPayload", "group-announced.json", encodeGroupRecord(announced)),
            seedOf("DhtPayload", "group-sealed.json", encodeGroupRecord(sealed)),
            seedOf("DhtPayload", "check.json", encodeCheckRecord(check)),
            seedOf("DhtPayload", "version.json", encodeVersionRecord(std::string(16, 'c'), UpdateEpoch)),
            seedOf("DhtPayload", "credit.json", creditToJson("0123456789abcdef0123456789abcdef", credit).dump()),
            seedOf("DhtRecord", "progress.cbor", record),
            seedOf("SealRelay", "relay.cbor", relayed),
            seedOf("MetricsRecord", "step.json", metrics.dump())};
}

} // namespace

std::vector<Seed> swarmSeeds()
{
    std::vector<Seed> out;
    for (auto part : {shardHeaderSeeds(), payloadSeeds(), serviceSeeds(), updateSeeds(), dhtSeeds()})
        for (auto &s : part)
            out.push_back(std::move(s));
    return out;
}

} // namespace dedloc::fuzz
