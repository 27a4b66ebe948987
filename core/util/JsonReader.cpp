#include "util/JsonReader.h"

#include "util/Error.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

namespace dedloc {

namespace {

// nlohmann's DOM builder behind a depth count: refusing a map or array that opens too deep
// stops the reader before it recurses further.
class DepthLimitedSax {
  public:
    DepthLimitedSax(nlohmann::json &result, std::size_t maxDepth) : m_dom(result, false), m_maxDepth(maxDepth) {}
    using Json = nlohmann::json;
    bool null() { return m_dom.null(); }
    bool boolean(bool v) { return m_dom.boolean(v); }
    bool number_integer(Json::number_integer_t v) { return m_dom.number_integer(v); }
    bool number_unsigned(Json::number_unsigned_t v) { return m_dom.number_unsigned(v); }
    bool number_float(Json::number_float_t v, const Json::string_t &s) { return m_dom.number_float(v, s); }
    bool string(Json::string_t &v) { return m_dom.string(v); }
    bool binary(Json::binary_t &v) { return m_dom.binary(v); }
    bool start_object(std::size_t n) { return ++m_depth <= m_maxDepth && m_dom.start_object(n); }
    bool key(Json::string_t &v) { return m_dom.key(v); }
    bool end_object() { --m_depth; return m_dom.end_object(); }
    bool start_array(std::size_t n) { return ++m_depth <= m_maxDepth && m_dom.start_array(n); }
    bool end_array() { --m_depth; return m_dom.end_array(); }
    bool parse_error(std::size_t at, const std::string &token, const nlohmann::detail::exception &e)
    {
        return m_dom.parse_error(at, token, e);
    }

  private:
    nlohmann::detail::json_sax_dom_parser<Json> m_dom;
    std::size_t m_maxDepth;
    std::size_t m_depth = 0;
};

// The document in [first, last) of `format`, or a discarded json (see parseCbor).
template <typename Input>
nlohmann::json parseDepthLimited(Input first, Input last, nlohmann::json::input_format_t format, std::size_t maxDepth)
{
    nlohmann::json result;
    DepthLimitedSax sax(result, maxDepth);
    try {
        if (nlohmann::json::sax_parse(first, last, &sax, format))
            return result;
    } catch (const nlohmann::json::exception &) {
        // The DOM builder throws for a declared size beyond max_size() whatever it was told.
    }
    return nlohmann::json(nlohmann::json::value_t::discarded);
}

} // namespace

nlohmann::json parseCbor(std::span<const std::uint8_t> bytes, std::size_t maxDepth)
{
    return parseDepthLimited(bytes.begin(), bytes.end(), nlohmann::json::input_format_t::cbor, maxDepth);
}

nlohmann::json parseJsonText(std::string_view text, std::size_t maxDepth)
{
    return parseDepthLimited(text.begin(), text.end(), nlohmann::json::input_format_t::json, maxDepth);
}

namespace {

using nlohmann::json;

// Shortest form that round-trips: "0.5", "1", "1e-06".
std::string numberText(double value)
{
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return {buffer, result.ptr};
}

} // namespace

std::string jsonExcerpt(const json &value)
{
    // A CBOR text string may hold any bytes: invalid UTF-8 shows as U+FFFD instead of throwing.
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    constexpr std::size_t kMax = 40;
    if (text.size() > kMax) {
        // Cut before a UTF-8 continuation byte, never inside a character.
        std::size_t cut = kMax;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
            --cut;
        text = text.substr(0, cut) + "...";
    }
    return text;
}

JsonObjectReader::JsonObjectReader(const json &document, std::initializer_list<std::string_view> known,
                                   JsonFailure onFailure)
    : JsonObjectReader(document, std::string(), known, std::move(onFailure))
{
}

JsonObjectReader::JsonObjectReader(const json &object, std::string path, std::initializer_list<std::string_view> known,
                                   JsonFailure onFailure)
    : m_object(object), m_path(std::move(path)), m_known(known), m_onFailure(std::move(onFailure))
{
    if (!m_object.is_object())
        failAt(m_path, "expected an object, got " + jsonExcerpt(m_object));
    for (const auto &item : m_object.items()) {
        if (std::find(m_known.begin(), m_known.end(), item.key()) == m_known.end())
            failAt(m_path, "unknown field \"" + item.key() + "\"");
    }
}

void JsonObjectReader::failAt(const std::string &path, const std::string &what) const
{
    if (m_onFailure)
        m_onFailure(path, what);
    throw Error(path.empty() ? what : path + ": " + what);
}

std::string JsonObjectReader::fieldPath(std::string_view key) const
{
    return m_path.empty() ? std::string(key) : m_path + "." + std::string(key);
}

void JsonObjectReader::fail(std::string_view key, const std::string &what) const
{
    failAt(fieldPath(key), what);
}

const json &JsonObjectReader::require(std::string_view key) const
{
    const auto it = m_object.find(key);
    if (it == m_object.end())
        fail(key, "missing");
    return *it;
}

std::string JsonObjectReader::string(std::string_view key) const
{
    const json &v = require(key);
    if (!v.is_string())
        fail(key, "expected a string, got " + jsonExcerpt(v));
    return v.get<std::string>();
}

std::string JsonObjectReader::nonEmptyString(std::string_view key) const
{
    std::string s = string(key);
    if (s.empty())
        fail(key, "must not be empty");
    return s;
}

int JsonObjectReader::integer(std::string_view key, int minimum) const
{
    const json &v = require(key);
    const char *expected = minimum > 0 ? "expected a positive integer" : "expected a non-negative integer";
    if (!v.is_number_integer())
        fail(key, std::string(expected) + ", got " + jsonExcerpt(v));
    constexpr auto kMax = std::numeric_limits<int>::max();
    // The parser stores non-negative literals as unsigned and negative ones as signed.
    const bool tooLarge = v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMax)
                                                 : v.get<std::int64_t>() > kMax;
    if (tooLarge)
        fail(key, std::string(expected) + " up to " + std::to_string(kMax) + ", got " + jsonExcerpt(v));
    if (v.get<std::int64_t>() < minimum)
        fail(key, std::string(expected) + ", got " + jsonExcerpt(v));
    return v.get<int>();
}

std::uint64_t JsonObjectReader::unsignedInteger(std::string_view key, std::uint64_t maximum) const
{
    const json &v = require(key);
    const bool inRange = v.is_number_unsigned()  ? v.get<std::uint64_t>() <= maximum
                         : v.is_number_integer() ? v.get<std::int64_t>() >= 0 &&
                                                       static_cast<std::uint64_t>(v.get<std::int64_t>()) <= maximum
                                                 : false;
    if (!inRange)
        fail(key, "expected a non-negative integer up to " + std::to_string(maximum) + ", got " + jsonExcerpt(v));
    return v.is_number_unsigned() ? v.get<std::uint64_t>() : static_cast<std::uint64_t>(v.get<std::int64_t>());
}

double JsonObjectReader::number(std::string_view key) const
{
    const json &v = require(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()))
        fail(key, "expected a number, got " + jsonExcerpt(v));
    return v.get<double>();
}

double JsonObjectReader::numberIn(std::string_view key, double low, bool lowOpen, double high, bool highOpen) const
{
    const double x = number(key);
    const bool ok = (lowOpen ? x > low : x >= low) && (highOpen ? x < high : x <= high);
    if (!ok) {
        const std::string range = std::isinf(high) ? std::string(lowOpen ? "> " : ">= ") + numberText(low)
                                                   : std::string("in ") + (lowOpen ? "(" : "[") + numberText(low) +
                                                         ", " + numberText(high) + (highOpen ? ")" : "]");
        fail(key, "expected a number " + range + ", got " + jsonExcerpt(require(key)));
    }
    return x;
}

bool JsonObjectReader::boolean(std::string_view key) const
{
    const json &v = require(key);
    if (!v.is_boolean())
        fail(key, "expected true or false, got " + jsonExcerpt(v));
    return v.get<bool>();
}

const json &JsonObjectReader::array(std::string_view key) const
{
    const json &v = require(key);
    if (!v.is_array())
        fail(key, "expected an array, got " + jsonExcerpt(v));
    return v;
}

JsonObjectReader JsonObjectReader::object(std::string_view key, std::initializer_list<std::string_view> known) const
{
    return {require(key), fieldPath(key), known, m_onFailure};
}

JsonObjectReader JsonObjectReader::objectAt(std::string_view key, std::size_t index,
                                            std::initializer_list<std::string_view> known) const
{
    return {array(key).at(index), fieldPath(key) + "[" + std::to_string(index) + "]", known, m_onFailure};
}

} // namespace dedloc
