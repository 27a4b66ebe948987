// The strict JSON object reader (util/JsonReader.h): every typed getter's type and range refusals
// word for word, missing required fields against optional ones, unknown fields named by their own
// (misspelt) key, dotted paths through nested objects and arrays, the caller's failure callback and
// its exception type, the dedloc::Error fallback when the callback returns, and jsonExcerpt().
#include "util/Error.h"
#include "util/JsonReader.h"

#include "TestSupport.h"

#include <QtTest>

#include <charconv>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using dedloc::JsonObjectReader;
using dedloc::test::errorOf;
using nlohmann::json;

namespace {

// The caller's own error type, unrelated to dedloc::Error.
struct DocumentError : std::runtime_error {
    DocumentError(std::string p, std::string w)
        : std::runtime_error("bad document"), path(std::move(p)), detail(std::move(w))
    {
    }
    std::string path;
    std::string detail;
};

int g_failures = 0; // calls of throwDocumentError

void throwDocumentError(const std::string &path, const std::string &what)
{
    ++g_failures;
    throw DocumentError(path, what);
}

// "=<result>" when `f` returns, "[<path>] <what>" when it throws DocumentError, "OTHER: ..." else.
QString outcome(const std::function<std::string()> &f)
{
    try {
        return QLatin1Char('=') + QString::fromStdString(f());
    } catch (const DocumentError &e) {
        return QString::fromStdString("[" + e.path + "] " + e.detail);
    } catch (const std::exception &e) {
        return QStringLiteral("OTHER: ") + QString::fromStdString(e.what());
    }
}

QString failureOf(const std::function<void()> &f)
{
    return outcome([&] {
        f();
        return std::string("<no failure>");
    });
}

std::string shortest(double x)
{
    char buffer[32];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, x);
    return {buffer, r.ptr};
}

// Each getter, called on the field "f" of a reader, its result as text.
using Getter = std::function<std::string(const JsonObjectReader &)>;
const std::map<QString, Getter> &allGetters()
{
    static const std::map<QString, Getter> all = {
        {"require", [](const JsonObjectReader &r) { return r.require("f").dump(); }},
        {"string", [](const JsonObjectReader &r) { return r.string("f"); }},
        {"nonEmptyString", [](const JsonObjectReader &r) { return r.nonEmptyString("f"); }},
        {"integer0", [](const JsonObjectReader &r) { return std::to_string(r.integer("f", 0)); }},
        {"integer1", [](const JsonObjectReader &r) { return std::to_string(r.integer("f", 1)); }},
        {"unsigned10", [](const JsonObjectReader &r) { return std::to_string(r.unsignedInteger("f", 10)); }},
        {"unsignedMax",
         [](const JsonObjectReader &r) {
             return std::to_string(r.unsignedInteger("f", std::numeric_limits<std::uint64_t>::max()));
         }},
        {"number", [](const JsonObjectReader &r) { return shortest(r.number("f")); }},
        {"boolean", [](const JsonObjectReader &r) { return std::string(r.boolean("f") ? "true" : "false"); }},
        {"array", [](const JsonObjectReader &r) { return r.array("f").dump(); }},
        {"object", [](const JsonObjectReader &r) { return r.object("f", {"a"}).fieldPath("a"); }},
    };
    return all;
}

} // namespace

class TestJsonReader : public QObject {
    Q_OBJECT
  private Q_SLOTS:
    void getters_data()
    {
        QTest::addColumn<QString>("getter");
        QTest::addColumn<QString>("value"); // the JSON text of field "f"
        QTest::addColumn<QString>("expected");
        const auto row = [](const char *getter, const char *value, const char *expected) {
            QTest::addRow("%s %s", getter, value)
                << QString::fromLatin1(getter) << QString::fromUtf8(value) << QString::fromUtf8(expected);
        };
        row("require", "null", "=null");
        row("require", "{\"x\":[1]}", "={\"x\":[1]}");
        row("string", "\"abc\"", "=abc");
        row("string", "\"\"", "=");
        row("string", "\"বাংলা\"", "=বাংলা");
        row("string", "5", "[f] expected a string, got 5");
        row("string", "null", "[f] expected a string, got null");
        row("string", "[\"a\"]", "[f] expected a string, got [\"a\"]");
        row("nonEmptyString", "\"x\"", "=x");
        row("nonEmptyString", "\"\"", "[f] must not be empty");
        row("nonEmptyString", "false", "[f] expected a string, got false");
        row("integer0", "0", "=0");
        row("integer1", "0", "[f] expected a positive integer, got 0");
        row("integer1", "1", "=1");
        row("integer0", "-1", "[f] expected a non-negative integer, got -1");
        row("integer1", "-5", "[f] expected a positive integer, got -5");
        row("integer1", "2147483647", "=2147483647");
        row("integer0", "2147483648", "[f] expected a non-negative integer up to 2147483647, got 2147483648");
        row("integer1", "18446744073709551615",
            "[f] expected a positive integer up to 2147483647, got 18446744073709551615");
        row("integer0", "-9223372036854775808", "[f] expected a non-negative integer, got -9223372036854775808");
        row("integer1", "2.0", "[f] expected a positive integer, got 2.0");
        row("integer1", "2.5", "[f] expected a positive integer, got 2.5");
        row("integer1", "1e3", "[f] expected a positive integer, got 1000.0");
        row("integer0", "true", "[f] expected a non-negative integer, got true");
        row("integer1", "\"3\"", "[f] expected a positive integer, got \"3\"");
        row("integer1", "null", "[f] expected a positive integer, got null");
        row("unsigned10", "0", "=0");
        row("unsigned10", "10", "=10");
        row("unsigned10", "11", "[f] expected a non-negative integer up to 10, got 11");
        row("unsigned10", "-1", "[f] expected a non-negative integer up to 10, got -1");
        row("unsigned10", "1.0", "[f] expected a non-negative integer up to 10, got 1.0");
        row("unsigned10", "false", "[f] expected a non-negative integer up to 10, got false");
        row("unsigned10", "\"5\"", "[f] expected a non-negative integer up to 10, got \"5\"");
        row("unsignedMax", "18446744073709551615", "=18446744073709551615");
        row("unsignedMax", "-1", "[f] expected a non-negative integer up to 18446744073709551615, got -1");
        row("number", "1", "=1");
        row("number", "-3", "=-3");
        row("number", "2.5", "=2.5");
        row("number", "1e-06", "=1e-06");
        row("number", "18446744073709551615", "=18446744073709551616");
        row("number", "\"1\"", "[f] expected a number, got \"1\"");
        row("number", "true", "[f] expected a number, got true");
        row("number", "null", "[f] expected a number, got null");
        row("boolean", "true", "=true");
        row("boolean", "false", "=false");
        row("boolean", "1", "[f] expected true or false, got 1");
        row("boolean", "\"true\"", "[f] expected true or false, got \"true\"");
        row("array", "[1,2]", "=[1,2]");
        row("array", "[]", "=[]");
        row("array", "{}", "[f] expected an array, got {}");
        row("array", "\"[]\"", "[f] expected an array, got \"[]\"");
        row("object", "{\"a\":1}", "=f.a");
        row("object", "[{\"a\":1}]", "[f] expected an object, got [{\"a\":1}]");
        row("object", "{\"b\":1}", "[f] unknown field \"b\"");
    }

    void getters()
    {
        QFETCH(QString, getter);
        QFETCH(QString, value);
        QFETCH(QString, expected);
        const json doc = json::parse("{\"f\":" + value.toStdString() + "}");
        const JsonObjectReader r(doc, {"f"}, throwDocumentError);
        g_failures = 0;
        QCOMPARE(outcome([&] { return allGetters().at(getter)(r); }), expected);
        QCOMPARE(g_failures, expected.startsWith(QLatin1Char('=')) ? 0 : 1);
    }

    void numberIn_data()
    {
        QTest::addColumn<QString>("value"); // empty: the field is absent
        QTest::addColumn<QString>("range"); // "[low,high)" and the like; "inf": unbounded above
        QTest::addColumn<QString>("expected");
        const auto row = [](const char *value, const char *range, const char *expected) {
            QTest::addRow("%s %s", range, value)
                << QString::fromLatin1(value) << QString::fromLatin1(range) << QString::fromLatin1(expected);
        };
        row("0", "[0,0.5)", "=0");
        row("0.49", "[0,0.5)", "=0.49");
        row("0.5", "[0,0.5)", "[f] expected a number in [0, 0.5), got 0.5");
        row("-0.1", "[0,0.5)", "[f] expected a number in [0, 0.5), got -0.1");
        row("0", "(0,1)", "[f] expected a number in (0, 1), got 0");
        row("1", "(0,1)", "[f] expected a number in (0, 1), got 1");
        row("1.0", "(0,1)", "[f] expected a number in (0, 1), got 1.0");
        row("1", "[0,1]", "=1");
        row("1.5", "[0,1]", "[f] expected a number in [0, 1], got 1.5");
        row("0", "(0,inf)", "[f] expected a number > 0, got 0");
        row("1e300", "(0,inf)", "=1e+300");
        row("0", "[0,inf)", "=0");
        row("-1", "[0,inf)", "[f] expected a number >= 0, got -1");
        row("0", "[1e-06,1]", "[f] expected a number in [1e-06, 1], got 0");
        row("\"0.2\"", "[0,1]", "[f] expected a number, got \"0.2\"");
        row("", "[0,1]", "[f] missing");
    }

    void numberIn()
    {
        QFETCH(QString, value);
        QFETCH(QString, range);
        QFETCH(QString, expected);
        const QStringList bounds = range.mid(1, range.size() - 2).split(QLatin1Char(','));
        const double low = bounds[0].toDouble();
        const double high =
            bounds[1] == QLatin1String("inf") ? std::numeric_limits<double>::infinity() : bounds[1].toDouble();
        const bool lowOpen = range.startsWith(QLatin1Char('('));
        const bool highOpen = range.endsWith(QLatin1Char(')'));
        const json doc = value.isEmpty() ? json::object() : json::parse("{\"f\":" + value.toStdString() + "}");
        const JsonObjectReader r(doc, {"f"}, throwDocumentError);
        QCOMPARE(outcome([&] { return shortest(r.numberIn("f", low, lowOpen, high, highOpen)); }), expected);
    }

    // Values no parser produces but a caller can build: signed 64-bit integers and non-finite numbers.
    void builtDocuments()
    {
        const json doc = {{"big", std::int64_t{3000000000}},
                          {"seven", std::int64_t{7}},
                          {"intMax", std::int64_t{2147483647}},
                          {"minus", std::int64_t{-2}},
                          {"nan", std::numeric_limits<double>::quiet_NaN()},
                          {"inf", std::numeric_limits<double>::infinity()}};
        const JsonObjectReader r(doc, {"big", "seven", "intMax", "minus", "nan", "inf"}, throwDocumentError);
        QCOMPARE(failureOf([&] { (void)r.integer("big", 0); }),
                 QStringLiteral("[big] expected a non-negative integer up to 2147483647, got 3000000000"));
        QCOMPARE(r.integer("seven", 1), 7);
        QCOMPARE(r.integer("intMax", 1), 2147483647);
        QCOMPARE(failureOf([&] { (void)r.integer("minus", 1); }),
                 QStringLiteral("[minus] expected a positive integer, got -2"));
        QCOMPARE(r.unsignedInteger("seven", 7), std::uint64_t(7));
        QCOMPARE(r.unsignedInteger("big", 3000000000), std::uint64_t(3000000000));
        QCOMPARE(failureOf([&] { (void)r.unsignedInteger("minus", 100); }),
                 QStringLiteral("[minus] expected a non-negative integer up to 100, got -2"));
        QCOMPARE(failureOf([&] { (void)r.number("nan"); }), QStringLiteral("[nan] expected a number, got null"));
        QCOMPARE(failureOf([&] { (void)r.number("inf"); }), QStringLiteral("[inf] expected a number, got null"));
        QCOMPARE(failureOf([&] { (void)r.numberIn("inf", 0, false, std::numeric_limits<double>::infinity(), false); }),
                 QStringLiteral("[inf] expected a number, got null"));
    }

    void missingRequiredAndOptionalFields()
    {
        const json doc = json::parse(R"({"present": null})");
        const JsonObjectReader r(doc, {"f", "present"}, throwDocumentError);
        QVERIFY(!r.has("f"));
        QVERIFY(r.has("present")); // present, even as null
        // The optional-field pattern reads nothing and refuses nothing.
        g_failures = 0;
        std::string description = "default";
        if (r.has("f"))
            description = r.string("f");
        QCOMPARE(description, std::string("default"));
        QCOMPARE(g_failures, 0);
        for (const auto &[name, getter] : allGetters()) {
            g_failures = 0;
            QCOMPARE(outcome([&] { return getter(r); }), QStringLiteral("[f] missing"));
            QCOMPARE(g_failures, 1);
        }
    }

    void documentMustBeAnObjectOfKnownFields()
    {
        const auto read = [](const char *text, std::initializer_list<std::string_view> known) {
            const json doc = json::parse(text);
            return failureOf([&] { JsonObjectReader r(doc, known, throwDocumentError); });
        };
        QCOMPARE(read("[1,2]", {}), QStringLiteral("[] expected an object, got [1,2]"));
        QCOMPARE(read("\"x\"", {}), QStringLiteral("[] expected an object, got \"x\""));
        QCOMPARE(read("null", {}), QStringLiteral("[] expected an object, got null"));
        QCOMPARE(read("{}", {}), QStringLiteral("=<no failure>"));
        QCOMPARE(read(R"({"name":"a","lead":"b"})", {"name", "lead", "description"}), QStringLiteral("=<no failure>"));
        // The typo is named; the correctly spelt key is not reported missing instead.
        QCOMPARE(read(R"({"nmae":"a"})", {"name"}), QStringLiteral("[] unknown field \"nmae\""));
        QCOMPARE(read(R"({"name":"a","extra":1})", {"name"}), QStringLiteral("[] unknown field \"extra\""));
    }

    void nestedPathsInMessages()
    {
        const json doc = json::parse(R"({
            "model": {"preset": "tiny", "num_heads": 2.5},
            "corpus": {"files": [{"path": "a", "sha256": "x"}, {"path": "b", "sha256": 7}, 5,
                                 {"path": "c", "sha": "d"}]},
            "deep": {"a": {"b": {"c": "no"}}}
        })");
        const JsonObjectReader root(doc, {"model", "corpus", "deep", "schedule"}, throwDocumentError);
        QCOMPARE(root.fieldPath("run_id"), std::string("run_id"));

        const JsonObjectReader model = root.object("model", {"preset", "num_heads"});
        QCOMPARE(model.fieldPath("preset"), std::string("model.preset"));
        QCOMPARE(model.string("preset"), std::string("tiny"));
        QCOMPARE(failureOf([&] { (void)model.integer("num_heads", 1); }),
                 QStringLiteral("[model.num_heads] expected a positive integer, got 2.5"));
        QCOMPARE(failureOf([&] { model.fail("preset", "expected one of tiny, default"); }),
                 QStringLiteral("[model.preset] expected one of tiny, default"));
        QCOMPARE(failureOf([&] { (void)root.object("model", {"preset"}); }),
                 QStringLiteral("[model] unknown field \"num_heads\""));
        QCOMPARE(failureOf([&] { (void)root.object("schedule", {}); }), QStringLiteral("[schedule] missing"));
        QCOMPARE(failureOf([&] { (void)model.objectAt("preset", 0, {}); }),
                 QStringLiteral("[model.preset] expected an array, got \"tiny\""));

        const JsonObjectReader corpus = root.object("corpus", {"files"});
        const JsonObjectReader first = corpus.objectAt("files", 0, {"path", "sha256"});
        QCOMPARE(first.fieldPath("path"), std::string("corpus.files[0].path"));
        QCOMPARE(first.string("sha256"), std::string("x"));
        QCOMPARE(failureOf([&] {
                     (void)corpus.objectAt("files", 1, {"path", "sha256"}).string("sha256");
                 }),
                 QStringLiteral("[corpus.files[1].sha256] expected a string, got 7"));
        QCOMPARE(failureOf([&] {
                     (void)corpus.objectAt("files", 2, {"path", "sha256"});
                 }),
                 QStringLiteral("[corpus.files[2]] expected an object, got 5"));
        QCOMPARE(failureOf([&] {
                     (void)corpus.objectAt("files", 3, {"path", "sha256"});
                 }),
                 QStringLiteral("[corpus.files[3]] unknown field \"sha\""));
        QCOMPARE(failureOf([&] { (void)corpus.objectAt("lists", 0, {}); }), QStringLiteral("[corpus.lists] missing"));

        const JsonObjectReader b = root.object("deep", {"a"}).object("a", {"b"}).object("b", {"c"});
        QCOMPARE(failureOf([&] { (void)b.boolean("c"); }),
                 QStringLiteral("[deep.a.b.c] expected true or false, got \"no\""));
    }

    void callbackExceptionTypePropagates()
    {
        const json doc = json::parse(R"({"model": {"num_heads": 2.5}})");
        const JsonObjectReader root(doc, {"model"}, throwDocumentError);
        const JsonObjectReader model = root.object("model", {"num_heads"});
        // The caller's own type, not dedloc::Error (DocumentError does not derive from it).
        g_failures = 0;
        QVERIFY_THROWS_EXCEPTION(DocumentError, (void)model.integer("num_heads", 1));
        QCOMPARE(g_failures, 1);
        QVERIFY_THROWS_EXCEPTION(DocumentError, JsonObjectReader(json::array(), {}, throwDocumentError));
    }

    void returningCallbackFallsBackToError()
    {
        const json doc = json::parse(R"({"model": {"num_heads": 2.5}, "typo": 1})");
        std::vector<std::string> calls;
        const dedloc::JsonFailure record = [&calls](const std::string &path, const std::string &what) {
            calls.push_back(path + "|" + what);
        };
        // An unknown field at the top: the message is the refusal alone, with no path before it.
        QCOMPARE(errorOf([&] { JsonObjectReader r(doc, {"model"}, record); }),
                 QStringLiteral("unknown field \"typo\""));
        QCOMPARE(calls, std::vector<std::string>{"|unknown field \"typo\""});
        calls.clear();
        const JsonObjectReader root(doc, {"model", "typo"}, record);
        QCOMPARE(errorOf([&] { (void)root.object("model", {"num_heads"}).integer("num_heads", 1); }),
                 QStringLiteral("model.num_heads: expected a positive integer, got 2.5"));
        QCOMPARE(calls, std::vector<std::string>{"model.num_heads|expected a positive integer, got 2.5"});

        // No callback at all: the same dedloc::Error.
        const JsonObjectReader bare(doc, {"model", "typo"}, dedloc::JsonFailure());
        QCOMPARE(errorOf([&] { (void)bare.object("model", {"num_heads"}).integer("num_heads", 1); }),
                 QStringLiteral("model.num_heads: expected a positive integer, got 2.5"));
        QCOMPARE(errorOf([&] { (void)bare.string("absent"); }), QStringLiteral("absent: missing"));
        QCOMPARE(errorOf([&] { JsonObjectReader r(json(5), {}, nullptr); }),
                 QStringLiteral("expected an object, got 5"));
    }

    void excerpts()
    {
        QCOMPARE(dedloc::jsonExcerpt(json(5)), std::string("5"));
        QCOMPARE(dedloc::jsonExcerpt(json(2.0)), std::string("2.0"));
        QCOMPARE(dedloc::jsonExcerpt(json("text")), std::string("\"text\""));
        QCOMPARE(dedloc::jsonExcerpt(json::parse("[1,2]")), std::string("[1,2]"));
        QCOMPARE(dedloc::jsonExcerpt(json::parse(R"({"a":1})")), std::string("{\"a\":1}"));
        QCOMPARE(dedloc::jsonExcerpt(json(nullptr)), std::string("null"));
        // 40 characters stay whole; 41 are cut to 40 and "...".
        const std::string x38(38, 'x');
        QCOMPARE(dedloc::jsonExcerpt(json(x38)), std::string("\"").append(x38).append("\""));
        QCOMPARE(dedloc::jsonExcerpt(json(x38 + "x")), std::string("\"").append(x38).append("x..."));
        std::vector<int> many(100);
        for (int i = 0; i < 100; ++i)
            many[i] = i;
        QCOMPARE(dedloc::jsonExcerpt(json(many)), std::string("[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,1..."));

        // Text of two-byte characters: byte 40 falls inside the 20th character, so the cut comes
        // before it (39 bytes, whole characters only).
        std::string accents;
        for (int i = 0; i < 30; ++i)
            accents += "\xc3\xa9"; // U+00E9
        const std::string cut = dedloc::jsonExcerpt(json(accents));
        QCOMPARE(cut.size(), std::size_t(42));
        const QByteArray bytes = QByteArray::fromStdString(cut);
        QCOMPARE(QString::fromUtf8(bytes).toUtf8(), bytes);
    }

    // parseJsonText and parseCbor refuse documents nested deeper than their limit (counting
    // arrays and objects alike), and malformed ones, as discarded values; the limit itself passes.
    void depthLimitedParsers()
    {
        const auto nested = [](std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
        QCOMPARE(dedloc::parseJsonText(nested(64)).dump(), nested(64));
        QVERIFY(dedloc::parseJsonText(nested(65)).is_discarded());
        QVERIFY(dedloc::parseJsonText(nested(200000)).is_discarded());
        QVERIFY(dedloc::parseJsonText(R"({"a":[{"b":[1]}]})", 4).is_object());
        QVERIFY(dedloc::parseJsonText(R"({"a":[{"b":[1]}]})", 3).is_discarded());
        for (const char *bad : {"", "{", "[1,]", "{\"a\":1}x", "nul"})
            QVERIFY2(dedloc::parseJsonText(bad).is_discarded(), bad);
        const auto cbor = nlohmann::json::to_cbor(nlohmann::json::parse(nested(33)));
        QVERIFY(dedloc::parseCbor(cbor).is_discarded());
        QVERIFY(!dedloc::parseCbor(cbor, 33).is_discarded());
    }
};

QTEST_APPLESS_MAIN(TestJsonReader)
#include "tst_jsonreader.moc"
