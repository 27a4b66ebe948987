#include "averaging/SketchRecord.h"

#include "net/DhtNode.h"
#include "net/WireMessage.h"
#include "util/Hash.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace dedloc {

namespace {

using json = nlohmann::json;

constexpr std::size_t ViewFields = 1 + CheckProjections + 7; // index, q, the seven sums
constexpr std::size_t OwnFields = ViewFields + 3;            // and excluded, averaged, far
constexpr std::size_t MaxFarBlocks = 4096;

// `x` to 9 significant digits, so that JSON writes at most that many (it writes the shortest text
// that reads back as the same double: 17 digits for most sums).
double nineDigits(double x)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", x);
    return std::strtod(text, nullptr);
}

json entry(std::size_t index, const ShardSketch &s, bool own)
{
    json e = json::array({index});
    for (double q : s.residual)
        e.push_back(nineDigits(q));
    for (double x : {s.spread, s.weight, s.maxWeight, s.groupWeight, s.radius, s.distance, s.slack})
        e.push_back(nineDigits(x));
    if (own) {
        e.push_back(nineDigits(s.excluded));
        e.push_back(nineDigits(s.averaged));
        e.push_back(s.far);
    }
    return e;
}

// Blocks far from their result: increasing block indices, at most MaxFarBlocks.
std::vector<std::uint32_t> parseFar(const json &list)
{
    if (!list.is_array() || list.size() > MaxFarBlocks)
        throw ProtocolError("sketch entry's far blocks are not a list of at most " + std::to_string(MaxFarBlocks));
    std::vector<std::uint32_t> far;
    for (const auto &b : list) {
        if (!b.is_number_unsigned() || b.get<std::uint64_t>() >= (1ULL << 32)
            || (!far.empty() && b.get<std::uint64_t>() <= far.back()))
            throw ProtocolError("sketch entry's far blocks are not increasing block indices");
        far.push_back(static_cast<std::uint32_t>(b.get<std::uint64_t>()));
    }
    return far;
}

// One entry: [index, q..., sums...]; the index below `members`.
std::pair<std::size_t, ShardSketch> parseEntry(const json &e, std::size_t members, bool own)
{
    if (!e.is_array() || e.size() != (own ? OwnFields : ViewFields) || !e[0].is_number_unsigned())
        throw ProtocolError("sketch entry is not [index, " + std::to_string(CheckProjections) + " projections, sums]");
    const auto index = e[0].get<std::uint64_t>();
    if (index >= members)
        throw ProtocolError("sketch entry names member " + std::to_string(index) + " of a group of "
                            + std::to_string(members));
    std::vector<double> x;
    const std::size_t numbers = own ? e.size() - 1 : e.size();
    for (std::size_t k = 1; k < numbers; ++k) {
        if (!e[k].is_number() || !std::isfinite(e[k].get<double>()))
            throw ProtocolError("sketch entry holds a value that is not a finite number");
        x.push_back(e[k].get<double>());
        if (k > CheckProjections && x.back() < 0.0)
            throw ProtocolError("sketch entry holds a negative sum");
    }
    ShardSketch s;
    s.shard = static_cast<std::uint32_t>(index);
    std::copy(x.begin(), x.begin() + CheckProjections, s.residual.begin());
    auto sums = x.begin() + CheckProjections;
    for (double *field : {&s.spread, &s.weight, &s.maxWeight, &s.groupWeight, &s.radius, &s.distance, &s.slack})
        *field = *sums++;
    if (own) {
        s.excluded = *sums++;
        s.averaged = *sums;
        s.far = parseFar(e.back());
    }
    return {static_cast<std::size_t>(index), s};
}

template <typename Add>
void parseList(const json &field, const char *key, std::size_t members, bool own, Add add)
{
    if (!field.contains(key))
        return;
    const auto &list = field.at(key);
    if (!list.is_array() || list.size() > MaxCheckedMembers)
        throw ProtocolError(std::string("sketches \"") + key + "\" is not a list of at most "
                            + std::to_string(MaxCheckedMembers) + " entries");
    std::vector<bool> seen(members, false);
    for (const auto &e : list) {
        auto [index, sketch] = parseEntry(e, members, own);
        if (seen[index])
            throw ProtocolError(std::string("sketches \"") + key + "\" name member " + std::to_string(index) + " twice");
        seen[index] = true;
        add(index, sketch);
    }
}

} // namespace

json encodeSketches(const RoundSketches &sketches)
{
    json o = json::array(), v = json::array();
    for (const auto &s : sketches.own)
        o.push_back(entry(s.shard, s, true));
    for (const auto &m : sketches.view)
        v.push_back(entry(m.member, m.sketch, false));
    return json{{"o", std::move(o)}, {"v", std::move(v)}};
}

RoundSketches parseSketches(const json &field, std::size_t members)
{
    if (!field.is_object())
        throw ProtocolError("sketches are not an object");
    for (const auto &[key, value] : field.items())
        if (key != "o" && key != "v")
            throw ProtocolError("sketches hold an unknown field \"" + key + "\"");
    RoundSketches out;
    parseList(field, "o", members, true, [&](std::size_t, const ShardSketch &s) { out.own.push_back(s); });
    parseList(field, "v", members, false, [&](std::size_t index, const ShardSketch &s) {
        auto entry = s;
        entry.shard = 0; // the view's shard is its publisher's, set by the reader
        out.view.push_back({index, entry});
    });
    return out;
}

std::string encodeCheckRecord(const CheckRecord &r)
{
    json j{{"e", r.epoch}, {"g", r.groupId}, {"n", r.members}, {"h", r.digest}, {"c", encodeSketches(r.sketches)}};
    if (r.partial)
        j["p"] = true;
    return j.dump();
}

CheckRecord parseCheckRecord(const std::string &peerId, const std::string &payload)
{
    const auto j = json::parse(payload, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        throw ProtocolError("check record payload is not a JSON object");
    for (const auto &[key, value] : j.items())
        if (key != "e" && key != "g" && key != "n" && key != "h" && key != "c" && key != "p")
            throw ProtocolError("check record holds an unknown field \"" + key + "\"");
    for (const char *key : {"e", "g", "n", "h", "c"})
        if (!j.contains(key))
            throw ProtocolError(std::string("check record without field \"") + key + "\"");
    CheckRecord r;
    r.peerId = peerId;
    const auto &e = j.at("e"), &n = j.at("n"), &g = j.at("g"), &h = j.at("h");
    if (!e.is_number_unsigned() || e.get<std::uint64_t>() > (1ULL << 40))
        throw ProtocolError("check record's epoch is not an integer from 0 to 2^40");
    r.epoch = static_cast<long>(e.get<std::uint64_t>());
    if (!n.is_number_unsigned() || n.get<std::uint64_t>() < 2 || n.get<std::uint64_t>() > MaxCheckedMembers)
        throw ProtocolError("check record's group size is not from 2 to " + std::to_string(MaxCheckedMembers));
    r.members = static_cast<std::size_t>(n.get<std::uint64_t>());
    if (!g.is_string() || g.get<std::string>().empty() || g.get<std::string>().size() > 64)
        throw ProtocolError("check record's group id is not a text of 1 to 64 bytes");
    r.groupId = g.get<std::string>();
    const bool hex = h.is_string() && h.get<std::string>().size() == 64
                     && h.get<std::string>().find_first_not_of("0123456789abcdef") == std::string::npos;
    if (!hex)
        throw ProtocolError("check record's digest is not 64 lower-case hex digits");
    r.digest = h.get<std::string>();
    r.sketches = parseSketches(j.at("c"), r.members);
    if (j.contains("p")) {
        if (!j.at("p").is_boolean())
            throw ProtocolError("check record's \"p\" is not a boolean");
        r.partial = j.at("p").get<bool>();
    }
    if (r.partial && !r.sketches.own.empty())
        throw ProtocolError("partial check record holds own sketches");
    return r;
}

std::string checksKey(const std::string &runId, long epoch, const std::string &groupId)
{
    const auto slot = std::stoul(sha256Hex(groupId.data(), groupId.size()).substr(0, 2), nullptr, 16) % CheckKeySlots;
    return runKey(runId, "checks/ring/" + std::to_string(epoch % CheckKeyRing) + "/" + std::to_string(slot));
}

} // namespace dedloc
