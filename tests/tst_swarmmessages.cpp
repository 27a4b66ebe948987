// The swarm's control messages (core/averaging/SwarmMessages.h): DHT payloads and service
// messages round trip, and every check of every parser refuses hostile input with a
// ProtocolError that names the reason.
#include "averaging/SwarmMessages.h"
#include "net/PeerIdentity.h"
#include "util/Hash.h"

#include <QRegularExpression>
#include <QTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <thread>

using namespace dedloc;
using nlohmann::json;

namespace {

using Mutation = std::function<void(json &)>;

struct Refusal {
    const char *name;
    Mutation change;
    const char *reason; // a regular expression the ProtocolError's message must match
};

// The message of the ProtocolError that `f` throws, or a text no test expects.
QString protocolErrorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const ProtocolError &e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception &e) {
        return QStringLiteral("NOT A ProtocolError: ") + QString::fromStdString(e.what());
    }
    return QStringLiteral("<no exception>");
}

const PeerIdentity &peer(int i)
{
    static const PeerIdentity identities[] = {PeerIdentity::generate(), PeerIdentity::generate(),
                                              PeerIdentity::generate()};
    return identities[i];
}
const PeerIdentity &alice() { return peer(0); }
const PeerIdentity &bob() { return peer(1); }
const PeerIdentity &carol() { return peer(2); }

std::string hexKey(const PeerIdentity &who)
{
    return toHex(who.publicKey().data(), who.publicKey().size());
}

SignedRecord record(const std::string &payload, const PeerIdentity &signer = alice())
{
    return {signer.peerId(), signer.publicKey(), 1, 1000.5, 1060.5, payload, {}};
}

JoinRequest validJoin(const PeerIdentity &who = alice())
{
    return {"run-1", 4, "s", who.peerId(), "tcp://127.0.0.1:9", 12.5, false, true, who.publicKey(), false, 5};
}

GroupInfo validGroup()
{
    return {"g1",
            7,
            {{alice().peerId(), "tcp://127.0.0.1:1", 100.0, 1.0, alice().publicKey(), ShardShareTotal - 1000},
             {bob().peerId(), "tcp://127.0.0.1:2", -1.0, 0.0, bob().publicKey(), 1000},
             {carol().peerId(), "", 0.0, 1.0, carol().publicKey(), 0}}};
}

// A CBOR service header of exactly `size` bytes (a padding string fills it up).
std::vector<std::uint8_t> headerOfSize(std::size_t size)
{
    const auto base = encodeServiceMessage("state?", {{"run", "r"}, {"pad", std::string(1000, 'x')}}).size();
    auto bytes = encodeServiceMessage("state?", {{"run", "r"}, {"pad", std::string(1000 + size - base, 'x')}});
    return bytes;
}

const auto tooLong = [](std::size_t n) { return std::string(n, 'a'); };

const std::vector<Refusal> progressCases = {
    {"missing epoch", [](json &j) { j.erase("e"); }, "missing field \"e\""},
    {"epoch as text", [](json &j) { j["e"] = "3"; }, "\"e\" is not an integer"},
    {"fractional epoch", [](json &j) { j["e"] = 1.5; }, "\"e\" is not an integer"},
    {"negative epoch", [](json &j) { j["e"] = -1; }, "\"e\" = -1 is out of range"},
    {"epoch beyond 2^40", [](json &j) { j["e"] = (1LL << 40) + 1; }, "\"e\" = 1099511627777 is out of range"},
    {"negative samples", [](json &j) { j["n"] = -10; }, "\"n\" = -10 is out of range"},
    {"rate as text", [](json &j) { j["r"] = "fast"; }, "\"r\" is not a number"},
    {"negative rate", [](json &j) { j["r"] = -0.5; }, "negative samples per second"},
    {"client mode as integer", [](json &j) { j["c"] = 1; }, "\"c\" is not a boolean"},
    {"role out of range", [](json &j) { j["o"] = 3; }, "\"o\" = 3 is out of range"},
    {"negative role", [](json &j) { j["o"] = -1; }, "\"o\" = -1 is out of range"},
    {"missing paused", [](json &j) { j.erase("z"); }, "missing field \"z\""},
    {"token as number", [](json &j) { j["k"] = 5; }, "\"k\" is not a string"},
    {"token too long", [](json &j) { j["k"] = tooLong(513); }, "\"k\" is longer than 512 bytes"},
};

const std::vector<Refusal> declarationCases = {
    {"missing epoch", [](json &j) { j.erase("e"); }, "missing field \"e\""},
    {"schema too long", [](json &j) { j["s"] = tooLong(129); }, "\"s\" is longer than 128 bytes"},
    {"schema as number", [](json &j) { j["s"] = 5; }, "\"s\" is not a string"},
    {"not a ZeroMQ endpoint", [](json &j) { j["a"] = "http://127.0.0.1:80"; }, "\"a\" is not a ZeroMQ endpoint"},
    {"endpoint too long", [](json &j) { j["a"] = "tcp://" + tooLong(251); }, "\"a\" is longer than 256 bytes"},
    {"deadline as text", [](json &j) { j["x"] = "soon"; }, "\"x\" is not a number"},
    {"missing client mode", [](json &j) { j.erase("c"); }, "missing field \"c\""},
    {"reachable without endpoint", [](json &j) { j["a"] = ""; }, "declared no service endpoint"},
};

const std::vector<Refusal> advertCases = {
    {"missing endpoint", [](json &j) { j.erase("a"); }, "missing field \"a\""},
    {"empty endpoint", [](json &j) { j["a"] = ""; }, "donor advert without an endpoint"},
    {"not a ZeroMQ endpoint", [](json &j) { j["a"] = "udp://127.0.0.1:1"; }, "\"a\" is not a ZeroMQ endpoint"},
    {"negative epoch", [](json &j) { j["e"] = -2; }, "\"e\" = -2 is out of range"},
    {"epoch as float", [](json &j) { j["e"] = 9.0; }, "\"e\" is not an integer"},
};

const std::vector<Refusal> joinCases = {
    {"missing run", [](json &j) { j.erase("run"); }, "missing field \"run\""},
    {"run too long", [](json &j) { j["run"] = tooLong(129); }, "\"run\" is longer than 128 bytes"},
    {"negative epoch", [](json &j) { j["e"] = -5; }, "\"e\" = -5 is out of range"},
    {"schema as array", [](json &j) { j["s"] = json::array(); }, "\"s\" is not a string"},
    {"empty peer id", [](json &j) { j["p"] = ""; }, "join without a peer id"},
    {"repair as number", [](json &j) { j["r"] = 1; }, "\"r\" is not a boolean"},
    {"expected peers above the group limit", [](json &j) { j["n"] = 257; }, "\"n\" = 257 is out of range"},
    {"another peer's id", [](json &j) { j["p"] = bob().peerId(); }, "\"k\" is not the key of peer"},
    {"another peer's key", [](json &j) { j["k"] = hexKey(bob()); }, "\"k\" is not the key of peer"},
    {"missing key", [](json &j) { j.erase("k"); }, "missing field \"k\""},
    {"short key", [](json &j) { j["k"] = hexKey(alice()).substr(0, 62); }, "field \"k\": .*64 hex digits"},
    {"key not hex", [](json &j) { j["k"] = std::string(64, 'z'); }, "field \"k\": .*64 hex digits"},
    {"key too long", [](json &j) { j["k"] = hexKey(alice()) + "00"; }, "\"k\" is longer than 64 bytes"},
    {"not a ZeroMQ endpoint", [](json &j) { j["a"] = "127.0.0.1:9"; }, "\"a\" is not a ZeroMQ endpoint"},
    {"NaN bandwidth", [](json &j) { j["b"] = std::numeric_limits<double>::quiet_NaN(); }, "\"b\" is not finite"},
    {"infinite bandwidth", [](json &j) { j["b"] = std::numeric_limits<double>::infinity(); }, "\"b\" is not finite"},
    {"bandwidth as text", [](json &j) { j["b"] = "1"; }, "\"b\" is not a number"},
    {"client mode as text", [](json &j) { j["c"] = "no"; }, "\"c\" is not a boolean"},
    {"missing sender", [](json &j) { j.erase("x"); }, "missing field \"x\""},
    {"reachable without endpoint", [](json &j) { j["a"] = ""; }, "without an all-reduce endpoint"},
    {"auxiliary client", [](json &j) { j.update(json::parse(R"({"c":true,"a":"","x":false})")); },
     "cannot be auxiliary"},
};

const std::vector<Refusal> groupCases = {
    {"empty group id", [](json &j) { j["g"] = ""; }, "empty group id"},
    {"group id too long", [](json &j) { j["g"] = tooLong(65); }, "\"g\" is longer than 64 bytes"},
    {"negative epoch", [](json &j) { j["e"] = -1; }, "\"e\" = -1 is out of range"},
    {"member repair as text", [](json &j) { j["m"][0]["r"] = "yes"; }, "\"r\" is not a boolean"},
    {"missing members", [](json &j) { j.erase("m"); }, "missing field \"m\""},
    {"members as map", [](json &j) { j["m"] = json::object(); }, "2 to 256 members"},
    {"one member", [](json &j) { j["m"] = json::array({j["m"][0]}); }, "2 to 256 members"},
    {"member not a map", [](json &j) { j["m"][2] = 5; }, "group member is not a map"},
    {"member with another's key", [](json &j) { j["m"][1]["k"] = hexKey(alice()); }, "\"k\" is not the key of peer"},
    {"member without key", [](json &j) { j["m"][1].erase("k"); }, "missing field \"k\""},
    {"member id too long", [](json &j) { j["m"][1]["p"] = tooLong(129); }, "\"p\" is longer than 128 bytes"},
    {"member endpoint", [](json &j) { j["m"][0]["a"] = "file:///etc"; }, "\"a\" is not a ZeroMQ endpoint"},
    {"member NaN bandwidth", [](json &j) { j["m"][0]["b"] = std::nan(""); }, "\"b\" is not finite"},
    {"member sender as int", [](json &j) { j["m"][0]["x"] = 1; }, "\"x\" is not a boolean"},
    {"member without role", [](json &j) { j["m"][2]["x"] = false; }, "neither a shard nor gradients"},
    {"duplicate member", [](json &j) { j["m"][2] = j["m"][0]; }, "appears twice in the group"},
    {"member without share", [](json &j) { j["m"][1].erase("z"); }, "missing field \"z\""},
    {"negative share", [](json &j) { j["m"][1]["z"] = -1; }, "\"z\" = -1 is out of range"},
    {"share above the total", [](json &j) { j["m"][1]["z"] = ShardShareTotal + 1; }, "is out of range"},
    {"shares short of the total", [](json &j) { j["m"][1]["z"] = 999; }, "shard shares sum to 1048575, not 1048576"},
    {"shares above the total", [](json &j) { j["m"][1]["z"] = 1001; }, "shard shares sum to 1048577"},
    {"client-mode member with a share", [](json &j) { j["m"][2]["z"] = 1; }, "client-mode member cannot hold a shard"},
    {"nobody has an endpoint", [](json &j) { j["m"][1]["x"] = true, j["m"][0]["a"] = j["m"][1]["a"] = ""; },
     "client-mode member cannot hold a shard"},
};

// 10 elements in parts of 4: 4 + 4 + 2.
StateInfo validState()
{
    return {"7-3", 12, 10, 3, 4, {}};
}

const std::vector<Refusal> stateCases = {
    {"other element count", [](json &j) { j["n"] = 11; }, "offers 11 state elements, this model has 10"},
    {"negative element count", [](json &j) { j["n"] = -10; }, "\"n\" = -10 is out of range"},
    {"zero part elements", [](json &j) { j.update(json::parse(R"({"q":0,"k":0})")); }, "layout is inconsistent"},
    {"too few parts", [](json &j) { j["k"] = 2; }, "layout is inconsistent"},
    {"too many parts", [](json &j) { j["k"] = 4; }, "layout is inconsistent"},
    {"parts beyond 2^24", [](json &j) { j["k"] = (1 << 24) + 1; }, "\"k\" = 16777217 is out of range"},
    {"part size beyond 2^24", [](json &j) { j["q"] = (1 << 24) + 1; }, "\"q\" = 16777217 is out of range"},
    {"snapshot id too long", [](json &j) { j["i"] = tooLong(65); }, "\"i\" is longer than 64 bytes"},
    {"snapshot id as number", [](json &j) { j["i"] = 7; }, "\"i\" is not a string"},
    {"missing epoch", [](json &j) { j.erase("e"); }, "missing field \"e\""},
};

// Each parser with a valid input and its refusals.
struct Parser {
    const char *what;
    std::function<json()> valid;
    std::function<void(const json &)> parse;
    const std::vector<Refusal> &cases;
};
const std::vector<Parser> parsers = {
    {"progress", [] { return json::parse(R"({"e":3,"n":10,"r":2.5,"c":false,"o":0,"z":false})"); },
     [](const json &j) { (void)parseProgress(record(j.dump())); }, progressCases},
    {"declaration", [] { return json::parse(R"({"e":3,"s":"0123abcd","a":"tcp://127.0.0.1:5","x":1.7e9,"c":false})"); },
     [](const json &j) { (void)parseDeclaration(record(j.dump())); }, declarationCases},
    {"donor advert", [] { return json::parse(R"({"a":"tcp://127.0.0.1:5555","e":9})"); },
     [](const json &j) { (void)parseDonorAdvert(record(j.dump())); }, advertCases},
    {"join", [] { return joinToJson(validJoin()); }, [](const json &j) { (void)joinFromJson(j); }, joinCases},
    {"group", [] { return groupToJson(validGroup()); }, [](const json &j) { (void)groupFromJson(j); }, groupCases},
    {"state", [] { return stateInfoToJson(validState()); }, [](const json &j) { (void)stateInfoFromJson(j, 10); },
     stateCases},
};

} // namespace

class TestSwarmMessages final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Every check of every parser: the valid input passes, each alteration is refused with its
    // reason.
    void refusals_data()
    {
        QTest::addColumn<int>("parser");
        QTest::addColumn<int>("which");
        for (std::size_t p = 0; p < parsers.size(); ++p)
            for (std::size_t i = 0; i < parsers[p].cases.size(); ++i)
                QTest::newRow(qPrintable(QStringLiteral("%1: %2").arg(QLatin1String(parsers[p].what),
                                                                      QLatin1String(parsers[p].cases[i].name))))
                    << static_cast<int>(p) << static_cast<int>(i);
    }
    void refusals()
    {
        QFETCH(int, parser);
        QFETCH(int, which);
        const auto &p = parsers[static_cast<std::size_t>(parser)];
        const auto &c = p.cases[static_cast<std::size_t>(which)];
        QCOMPARE(protocolErrorOf([&] { p.parse(p.valid()); }), QStringLiteral("<no exception>"));
        auto altered = p.valid();
        c.change(altered);
        const auto error = protocolErrorOf([&] { p.parse(altered); });
        QVERIFY2(error.contains(QRegularExpression(QString::fromLatin1(c.reason))), qPrintable(error));
    }

    // Every role survives; peer id and times come from the signed record, never the payload.
    void progressRoundTrip()
    {
        for (const auto role : {PeerRole::Trainer, PeerRole::Auxiliary, PeerRole::Monitor}) {
            const auto token = role == PeerRole::Auxiliary ? std::string(512, 't') : std::string();
            // peer id and times that the payload must not carry; the largest epoch accepted
            const ProgressRecord r{"someone else", 1L << 40, 1234, 56.25, 5.0, 6.0, role == PeerRole::Trainer, role,
                                   role == PeerRole::Monitor, role != PeerRole::Auxiliary, token, false, -1, {}};
            const auto payload = encodeProgress(r);
            QCOMPARE(json::parse(payload).contains("k"), !r.accessToken.empty());
            const auto p = parseProgress(record(payload));
            QCOMPARE(p.peerId, alice().peerId());
            QCOMPARE(p.time, 1000.5);
            QCOMPARE(p.expiresAt, 1060.5);
            QCOMPARE(p.epoch, 1L << 40);
            QCOMPARE(p.samplesAccumulated, 1234L);
            QCOMPARE(p.samplesPerSecond, 56.25);
            QCOMPARE(p.clientMode, r.clientMode);
            QCOMPARE(int(p.role), int(role));
            QCOMPARE(p.paused, r.paused);
            QCOMPARE(p.averages, r.averages);
            QCOMPARE(p.accessToken, r.accessToken);
            QVERIFY(!p.syncing && !json::parse(payload).contains("y")); // "y" written only when set
            auto syncing = r;
            QVERIFY(parseProgress(record(encodeProgress((syncing.syncing = true, syncing)))).syncing);
            auto without = json::parse(payload); // without "a": every role averages but the monitor
            QCOMPARE(parseProgress(record((without.erase("a"), without).dump())).averages, role != PeerRole::Monitor);
        }
    }

    // Payloads that are no JSON object; a number too large for a double is not smuggled in as
    // infinity.
    void payloadsThatAreNotObjects()
    {
        for (const std::string payload : {"", "{", "[1,2]", "\"text\"", "42", "{\"e\":1}x"}) {
            QVERIFY2(protocolErrorOf([&] {
                         (void)parseProgress(record(payload));
                     }).contains("progress payload is not a JSON object"),
                     payload.c_str());
            QVERIFY(protocolErrorOf([&] { (void)parseDeclaration(record(payload)); }).contains("declaration payload"));
            QVERIFY(protocolErrorOf([&] { (void)parseDonorAdvert(record(payload)); }).contains("donor advert payload"));
        }
        const auto overflow = protocolErrorOf(
            [] { (void)parseProgress(record(R"({"e":1,"n":1,"r":1e400,"c":false,"o":0,"z":false})")); });
        QVERIFY2(overflow.contains(QRegularExpression("not a JSON object|not finite")), qPrintable(overflow));
    }

    // The signer's key comes from the record; every ZeroMQ transport is accepted; a client-mode
    // peer needs no endpoint.
    void declarationRoundTrip()
    {
        for (const std::string endpoint : {"tcp://10.0.0.1:5555", "ipc:///tmp/peer", "inproc://peer", ""}) {
            Declaration d{"ignored", 7, "0123456789abcdef", endpoint, 1700000000.25, endpoint.empty(), {}};
            const auto parsed = parseDeclaration(record(encodeDeclaration(d), bob()));
            QCOMPARE(parsed.peerId, bob().peerId());
            QVERIFY(parsed.publicKey == bob().publicKey());
            QCOMPARE(parsed.epoch, 7L);
            QCOMPARE(parsed.schema, d.schema);
            QCOMPARE(parsed.serviceEndpoint, endpoint);
            QCOMPARE(parsed.expiresAt, 1700000000.25);
            QCOMPARE(parsed.clientMode, endpoint.empty());
        }
    }

    void donorAdvertRoundTrip()
    {
        const auto parsed =
            parseDonorAdvert(record(encodeDonorAdvert({"ignored", "tcp://127.0.0.1:7000", 41, {}}), carol()));
        QVERIFY(parsed.peerId == carol().peerId() && parsed.publicKey == carol().publicKey());
        QVERIFY(parsed.serviceEndpoint == "tcp://127.0.0.1:7000" && parsed.epoch == 41L);
        QVERIFY(!parsed.mayDiffer); // "d" absent
        QVERIFY(parseDonorAdvert(record(encodeDonorAdvert({"x", "tcp://127.0.0.1:7000", 41, {}, true}))).mayDiffer);
    }

    // Every known type passes with its fields; the encoder sets version and type itself, so
    // fields cannot override them.
    void serviceMessageRoundTrip()
    {
        for (const std::string type :
             {"join", "accept", "refuse", "begin", "disband", "state?", "state", "part?", "part"}) {
            const auto m = parseServiceMessage(encodeServiceMessage(type, {{"why", "x"}, {"t", "hello"}, {"v", ServiceProtocolVersion + 1}}));
            QCOMPARE(m.at("t").get<std::string>(), type);
            QCOMPARE(m.at("v").get<int>(), ServiceProtocolVersion);
            QCOMPARE(m.at("why").get<std::string>(), std::string("x"));
        }
        const auto bare = parseServiceMessage(encodeServiceMessage("disband", json::array({1, 2})));
        QCOMPARE(bare.size(), std::size_t(2)); // only v and t
    }

    void serviceHeaderSizeLimit()
    {
        const auto largest = headerOfSize(MaxServiceHeaderBytes);
        QCOMPARE(largest.size(), MaxServiceHeaderBytes);
        QCOMPARE(parseServiceMessage(largest).at("t").get<std::string>(), std::string("state?"));
        const auto oversized = headerOfSize(MaxServiceHeaderBytes + 1);
        QCOMPARE(oversized.size(), MaxServiceHeaderBytes + 1);
        QVERIFY(protocolErrorOf([&] { (void)parseServiceMessage(oversized); }).contains("bytes exceeds 16384"));
    }

    // The deepest nesting that fits in a header (a service thread parses it) and a deeply nested
    // DHT payload are parsed or refused, never a crash.
    void deeplyNestedInputIsHandled()
    {
        std::vector<std::uint8_t> nested = encodeServiceMessage("state?", {{"run", "r"}});
        nested[0] += 1;         // one more map entry: "x" -> [[[...]]]
        nested.push_back(0x61); // text of 1 byte
        nested.push_back('x');
        const auto depth = MaxServiceHeaderBytes - nested.size() - 1;
        nested.insert(nested.end(), depth, 0x81); // array of one element, nested
        nested.push_back(0x80);                   // the innermost, empty array
        QCOMPARE(nested.size(), MaxServiceHeaderBytes);
        QString type, error;
        std::thread parser([&] {
            error = protocolErrorOf(
                [&] { type = QString::fromStdString(parseServiceMessage(nested).at("t").get<std::string>()); });
        });
        parser.join();
        QVERIFY2(type == "state?" || error.contains("not a CBOR map"), qPrintable(error));
        const auto payload = R"({"e":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
        QVERIFY(protocolErrorOf([&] { (void)parseProgress(record(payload)); }).contains("\"e\" is not an integer"));
    }

    void serviceMessageRefusals_data()
    {
        QTest::addColumn<std::vector<std::uint8_t>>("bytes");
        QTest::addColumn<QString>("reason");
        const auto valid = encodeServiceMessage("state?", {{"run", "r"}});
        auto cbor = [](const json &j) { return json::to_cbor(j); };
        QTest::newRow("empty") << std::vector<std::uint8_t>{} << "not a CBOR map";
        QTest::newRow("garbage") << std::vector<std::uint8_t>{0xff, 0xfe, 0x00} << "not a CBOR map";
        QTest::newRow("truncated") << std::vector<std::uint8_t>(valid.begin(), valid.begin() + 5) << "not a CBOR map";
        auto trailing = valid;
        trailing.push_back(0x00);
        QTest::newRow("trailing byte") << trailing << "not a CBOR map";
        QTest::newRow("array") << cbor(json::array({1, "state?"})) << "not a CBOR map";
        QTest::newRow("missing version") << cbor({{"t", "state?"}}) << "missing field \"v\"";
        QTest::newRow("wrong version") << cbor({{"v", 1}, {"t", "state?"}}) << QStringLiteral("version 1 is not %1").arg(ServiceProtocolVersion);
        QTest::newRow("version as text") << cbor({{"v", "1"}, {"t", "state?"}}) << "\"v\" is not an integer";
        QTest::newRow("huge version") << cbor({{"v", 1001}, {"t", "state?"}}) << "\"v\" = 1001 is out of range";
        QTest::newRow("missing type") << cbor({{"v", ServiceProtocolVersion}}) << "missing field \"t\"";
        QTest::newRow("type as number") << cbor({{"v", ServiceProtocolVersion}, {"t", 3}}) << "\"t\" is not a string";
        QTest::newRow("type too long") << cbor({{"v", ServiceProtocolVersion}, {"t", std::string(17, 'j')}}) << "\"t\" is longer than 16";
        QTest::newRow("unknown type") << cbor({{"v", ServiceProtocolVersion}, {"t", "hello"}}) << "unknown service message \"hello\"";
        QTest::newRow("type of another case") << cbor({{"v", ServiceProtocolVersion}, {"t", "JOIN"}}) << "unknown service message";
    }
    void serviceMessageRefusals()
    {
        QFETCH(std::vector<std::uint8_t>, bytes);
        QFETCH(QString, reason);
        const auto error = protocolErrorOf([&] { (void)parseServiceMessage(bytes); });
        QVERIFY2(error.contains(reason), qPrintable(error));
    }

    // Through the wire encoding, as the leader's service socket reads it.
    void joinRoundTrip()
    {
        const std::vector<JoinRequest> requests = {
            validJoin(),
            {"run-1", 0, "s", bob().peerId(), "", -1.0, true, true, bob().publicKey()}, // client mode
            {"run-1", 9, "s", carol().peerId(), "tcp://127.0.0.1:3", 0.0, false, false,
             carol().publicKey(), true}, // auxiliary asking for repair
        };
        for (const auto &r : requests) {
            const auto j = parseServiceMessage(encodeServiceMessage("join", joinToJson(r)));
            const auto p = joinFromJson(j);
            QCOMPARE(p.runId, r.runId);
            QCOMPARE(p.epoch, r.epoch);
            QCOMPARE(p.schema, r.schema);
            QCOMPARE(p.peerId, r.peerId);
            QVERIFY(p.publicKey == r.publicKey);
            QCOMPARE(p.allReduceEndpoint, r.allReduceEndpoint);
            QCOMPARE(p.bandwidth, r.bandwidth);
            QCOMPARE(p.clientMode, r.clientMode);
            QCOMPARE(p.sender, r.sender);
            QCOMPARE(p.repair, r.repair);
            QCOMPARE(p.expected, r.expected);
        }
        // A NaN bandwidth passes the CBOR header check and is refused by the join parser.
        auto j = joinToJson(validJoin());
        j["b"] = std::numeric_limits<double>::quiet_NaN();
        const auto m = parseServiceMessage(encodeServiceMessage("join", j));
        QVERIFY(protocolErrorOf([&] { (void)joinFromJson(m); }).contains("\"b\" is not finite"));
    }

    // Members keep their order, keys and endpoints; any positive weight travels as "sender".
    void groupRoundTrip()
    {
        auto group = validGroup();
        group.members[0].weight = 48.0;
        const auto parsed = groupFromJson(parseServiceMessage(encodeServiceMessage("begin", groupToJson(group))));
        QVERIFY(parsed.groupId == "g1" && parsed.epoch == 7L);
        group.members[1].repair = true; // one member asks: the group averages the state
        const auto repaired = groupFromJson(groupToJson(group));
        QVERIFY(!parsed.stateRound() && repaired.stateRound() && !repaired.members[0].repair
                && repaired.members[1].repair && !repaired.members[2].repair);
        QCOMPARE(parsed.members.size(), std::size_t(3));
        const double weights[] = {1.0, 0.0, 1.0};
        for (std::size_t i = 0; i < 3; ++i) {
            QCOMPARE(parsed.members[i].peerId, group.members[i].peerId);
            QVERIFY(parsed.members[i].publicKey == group.members[i].publicKey);
            QCOMPARE(parsed.members[i].endpoint, group.members[i].endpoint);
            QCOMPARE(parsed.members[i].bandwidth, group.members[i].bandwidth);
            QCOMPARE(parsed.members[i].weight, weights[i]);
            QCOMPARE(parsed.members[i].share, group.members[i].share);
        }
    }

    // MaxGroupMembers distinct, valid members pass; one more is refused for its count alone.
    void groupSizeLimit()
    {
        GroupInfo group{"big", 1, {}};
        for (std::size_t i = 0; i <= MaxGroupMembers; ++i) {
            const auto who = PeerIdentity::generate();
            group.members.push_back(
                {who.peerId(), "tcp://127.0.0.1:" + std::to_string(2000 + i), 1.0, 1.0, who.publicKey(), i == 0 ? ShardShareTotal : 0});
        }
        const auto tooMany = groupToJson(group);
        QVERIFY(protocolErrorOf([&] { (void)groupFromJson(tooMany); }).contains("2 to 256 members"));
        group.members.pop_back();
        QCOMPARE(groupFromJson(groupToJson(group)).members.size(), MaxGroupMembers);
    }

    void stateInfoRoundTrip()
    {
        for (const auto &s : {validState(), StateInfo{"8-1", 0, 8, 2, 4, {}}, StateInfo{"1-1", 3, 1, 1, 131072, {}}}) {
            const auto m = parseServiceMessage(encodeServiceMessage("state", stateInfoToJson(s)));
            const auto p = stateInfoFromJson(m, s.elements);
            QCOMPARE(p.snapshotId, s.snapshotId);
            QCOMPARE(p.epoch, s.epoch);
            QCOMPARE(p.elements, s.elements);
            QCOMPARE(p.parts, s.parts);
            QCOMPARE(p.partElements, s.partElements);
        }
        // A valid layout of another model's size is refused: the requester's size decides.
        const auto j = stateInfoToJson({"1-1", 5, 1000, 8, 128, {}});
        QVERIFY(protocolErrorOf([&] { (void)stateInfoFromJson(j, 999); }).contains("offers 1000 state elements"));
        QVERIFY(protocolErrorOf([&] { (void)stateInfoFromJson(j, 1001); }).contains("this model has 1001"));
    }

    // 16 lowercase hex digits, the same for the same layout, different if any input differs.
    void schemaHashIdentifiesTheLayout()
    {
        const auto h = schemaHash("run-1", 1000, "grads/fp16");
        QCOMPARE(h.size(), std::size_t(16));
        QVERIFY(QString::fromStdString(h).contains(QRegularExpression("^[0-9a-f]{16}$")));
        QCOMPARE(schemaHash("run-1", 1000, "grads/fp16"), h);
        QVERIFY(schemaHash("run-2", 1000, "grads/fp16") != h);
        QVERIFY(schemaHash("run-1", 1001, "grads/fp16") != h);
        QVERIFY(schemaHash("run-1", 1000, "grads/none") != h);
        QVERIFY(schemaHash("run-1", 1000, "state") != schemaHash("run-1", 1000, "grads/fp16"));
    }
};

QTEST_APPLESS_MAIN(TestSwarmMessages)
#include "tst_swarmmessages.moc"
