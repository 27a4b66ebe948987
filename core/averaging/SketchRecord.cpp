#include "averaging/SketchRecord.h"

#include "net/WireMessage.h"

#include <cmath>

namespace dedloc {

namespace {

using json = nlohmann::json;

constexpr std::size_t ViewFields = 1 + CheckProjections + 7; // index, q, the seven sums
constexpr std::size_t OwnFields = ViewFields + 3;            // and excluded, averaged, far
constexpr std::size_t MaxFarBlocks = 4096;

json entry(std::size_t index, const ShardSketch &s, bool own)
{
    json e = json::array({index});
    for (double q : s.residual)
        e.push_back(q);
    for (double x : {s.spread, s.weight, s.maxWeight, s.groupWeight, s.radius, s.distance, s.slack})
        e.push_back(x);
    if (own) {
        e.push_back(s.excluded);
        e.push_back(s.averaged);
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

} // namespace dedloc
