#pragma once
// A strict reader for one JSON object of a document that every peer must read the same way (the
// run manifest, the data plane's message headers). The set of known keys is given up front, so a
// misspelt key is reported as unknown (naming the typo) rather than as the correctly spelt key
// "missing"; each typed getter checks presence, type and range. JSON has one number type, so
// booleans and 2.0 / 2.5 are not integers: a field means the same thing whatever wrote the file.
//
// Errors: every refusal goes to the caller's JsonFailure with the dotted path of the field at
// fault ("model.num_heads", "corpus.files[1].sha256"; empty for the document itself) and what is
// wrong ("missing", "expected a positive integer, got 2.5"). The JsonFailure throws the caller's
// own error type with its own wording; should it return (or be empty), the reader throws
// dedloc::Error("<path>: <what>"), so a getter never returns an unchecked value.
// Units: none; numbers are returned as the document holds them.
// Threads: a reader only reads the json it was given (which must outlive it) and may be used
// from any one thread at a time.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dedloc {

// Reports a refused document (see above); meant to throw.
using JsonFailure = std::function<void(const std::string &path, const std::string &what)>;

// A value as it appears in the document, shortened so one bad field cannot flood a message:
// 5, "text", [1,2], {"a":1}, or its first 40 bytes (less, to end on a whole UTF-8 character)
// and "...".
[[nodiscard]] std::string jsonExcerpt(const nlohmann::json &value);

// CBOR (RFC 8949) into json, as nlohmann::json::from_cbor reads it (strict: no bytes after the
// item; tags refused), except that maps and arrays nested deeper than `maxDepth` are refused:
// from_cbor recurses once per level, so a peer's message of a few KiB of nested arrays would
// overflow the reading thread's stack. Returns a discarded json (is_discarded()) for malformed
// or too deeply nested bytes; never throws a parse error.
[[nodiscard]] nlohmann::json parseCbor(std::span<const std::uint8_t> bytes, std::size_t maxDepth = 32);
// JSON text, likewise: nlohmann parses text without recursing, but copying or dumping the result
// recurses once per level (a 100,000-deep array crashes a copy), so a document from a stranger
// (a checkpoint's header) is refused beyond `maxDepth`. Discarded json for malformed or too
// deeply nested text; never throws a parse error.
[[nodiscard]] nlohmann::json parseJsonText(std::string_view text, std::size_t maxDepth = 64);

class JsonObjectReader final {
  public:
    // Reads `document` as the root object: refuses it unless it is an object whose keys are all
    // in `known` (string literals: the reader keeps views of them).
    JsonObjectReader(const nlohmann::json &document, std::initializer_list<std::string_view> known,
                     JsonFailure onFailure);

    // The dotted path of this object's field `key` ("training.sequence_length").
    [[nodiscard]] std::string fieldPath(std::string_view key) const;
    // Reports `what` about the field `key` through the JsonFailure.
    [[noreturn]] void fail(std::string_view key, const std::string &what) const;

    [[nodiscard]] bool has(std::string_view key) const { return m_object.contains(key); }
    // The field's value, whatever its type; refused when absent.
    [[nodiscard]] const nlohmann::json &require(std::string_view key) const;

    [[nodiscard]] std::string string(std::string_view key) const;
    [[nodiscard]] std::string nonEmptyString(std::string_view key) const;
    // An integer from `minimum` (0 or 1: "non-negative" or "positive") to INT_MAX.
    [[nodiscard]] int integer(std::string_view key, int minimum) const;
    // An integer from 0 to `maximum`.
    [[nodiscard]] std::uint64_t unsignedInteger(std::string_view key, std::uint64_t maximum) const;
    // A finite number, integer or not.
    [[nodiscard]] double number(std::string_view key) const;
    // A finite number in the range from `low` to `high` (infinity: unbounded above); lowOpen and
    // highOpen exclude the bound itself.
    [[nodiscard]] double numberIn(std::string_view key, double low, bool lowOpen, double high, bool highOpen) const;
    [[nodiscard]] bool boolean(std::string_view key) const;
    [[nodiscard]] const nlohmann::json &array(std::string_view key) const;
    // The field `key` as an object with the keys `known`, read with the same JsonFailure.
    [[nodiscard]] JsonObjectReader object(std::string_view key, std::initializer_list<std::string_view> known) const;
    // Element `index` (below the size) of the array field `key` as an object with the keys `known`.
    [[nodiscard]] JsonObjectReader objectAt(std::string_view key, std::size_t index,
                                            std::initializer_list<std::string_view> known) const;

  private:
    JsonObjectReader(const nlohmann::json &object, std::string path, std::initializer_list<std::string_view> known,
                     JsonFailure onFailure);
    [[noreturn]] void failAt(const std::string &path, const std::string &what) const;

    const nlohmann::json &m_object;
    std::string m_path; // empty for the document itself
    std::vector<std::string_view> m_known;
    JsonFailure m_onFailure;
};

} // namespace dedloc
