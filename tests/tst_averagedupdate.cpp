// Averaged updates (core/averaging/AveragedUpdate.h): a real compressed round's captured pieces
// decode to exactly the average every member applied; pieces that do not tile are refused.
#include "AllReduceSwarm.h"
#include "averaging/AveragedUpdate.h"
#include "averaging/SwarmMessages.h"
#include "averaging/UpdateArchive.h"
#include "net/WireMessage.h"

#include <QtTest>

#include <thread>

using namespace dedloc;
using namespace dedloc::test;

class TestAveragedUpdate final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    // Three members (one in client mode), 8-bit blocks, several parts a shard: each member's
    // captured pieces (RESULTs received, its own parts reduced) assemble into an update whose
    // decoding is bit for bit the vector it ended the round with.
    void capturedPiecesDecodeToTheAppliedAverage()
    {
        Swarm s({true, false, true}, {1.0, 2.0, 3.0}, 50021);
        std::vector<std::vector<EncodedPiece>> captured(3);
        std::vector<AllReduceOptions> o(3);
        std::vector<std::thread> threads;
        for (std::size_t i = 0; i < 3; ++i) {
            o[i].codec = Compression::Blockwise8Bit;
            o[i].partElements = 4096;
            o[i].capture = &captured[i];
            threads.emplace_back([&, i] { s.reports[i] = s.endpoints[i]->run("group-1", s.members, i, s.values[i], o[i]); });
        }
        for (auto &t : threads)
            t.join();
        for (std::size_t i = 0; i < 3; ++i) {
            QVERIFY(s.reports[i].complete);
            const auto u = assembleUpdate(7, 96, Compression::Blockwise8Bit, s.values[i].size(), captured[i]);
            QVERIFY(u.has_value());
            QCOMPARE(u->epoch, 7L);
            QVERIFY(u->bytes.size() < s.values[i].size() * 2); // 8 bits a value and the block scales
            QVERIFY(bitwiseEqual(decodeUpdate(*u), s.values[i]));
        }
    }

    // A sparse round's update (variable-length pieces) crosses the wire as the replay does: its
    // header is checked before the bytes arrive (sized, not filled), the bytes when decoded.
    void sparseUpdateCrossesTheWire()
    {
        const std::size_t n = 3 * BlockwiseBlockElements + 100;
        std::vector<float> values(n, 0.0F);
        for (std::size_t i = 0; i < n; i += 29)
            values[i] = 0.125F * static_cast<float>(i % 7) - 0.25F;
        const auto split = 2 * BlockwiseBlockElements;
        std::vector<EncodedPiece> pieces{
            {0, split, encode(Compression::SparseFp16, std::span(values).first(split))},
            {split, n - split, encode(Compression::SparseFp16, std::span(values).subspan(split))}};
        const auto sent = *assembleUpdate(3, 64, Compression::SparseFp16, n, std::move(pieces));
        QVERIFY(sent.bytes.size() < n); // sparse: under a byte an element
        // As a donor answers and a requester reads it: a service message (CBOR).
        const auto wire = [](const nlohmann::json &h) { return parseServiceMessage(encodeServiceMessage("update", h)); };
        auto received = updateFromHeader(wire(updateHeaderToJson(sent)), 3, n);
        QCOMPARE(received.bytes.size(), sent.bytes.size());
        received.bytes = sent.bytes; // the chunks arrive
        QCOMPARE(decodeUpdate(received), decodeUpdate(sent));
        for (std::size_t i = 0; i < n; ++i)
            QCOMPARE(decodeUpdate(received)[i], halfToFloat(floatToHalf(values[i])));
        // A header whose size no encoding of its pieces can have is refused before any download.
        auto header = updateHeaderToJson(sent);
        header["s"] = 4; // less than the pieces' block counts
        header["m"] = updateChunks(4);
        QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)updateFromHeader(wire(header), 3, n));
        // Bytes that do not parse as the pieces' encodings are refused when decoded.
        auto garbled = received;
        garbled.bytes[0] = 0xff; // the first block counts more values than it has elements
        garbled.bytes[1] = 0xff;
        QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)decodeUpdate(garbled));
    }

    void piecesThatDoNotTileAreRefused()
    {
        const std::vector<float> values{1.0F, -2.0F, 3.5F, 0.25F, 8.0F};
        auto piece = [&](std::uint64_t offset, std::uint64_t count) {
            std::vector<std::uint8_t> bytes(encodedBytes(Compression::None, count));
            encodeInto(Compression::None, std::span(values).subspan(offset, count), bytes);
            return EncodedPiece{offset, count, bytes};
        };
        const auto whole = assembleUpdate(0, 1, Compression::None, 5, {piece(3, 2), piece(0, 3)});
        QVERIFY(whole.has_value());
        QCOMPARE(decodeUpdate(*whole), values);
        QVERIFY(!assembleUpdate(0, 1, Compression::None, 5, {piece(0, 3)}));               // a gap at the end
        QVERIFY(!assembleUpdate(0, 1, Compression::None, 5, {piece(0, 3), piece(2, 3)}));  // an overlap
        QVERIFY(!assembleUpdate(0, 1, Compression::None, 5, {piece(0, 3), piece(3, 2), piece(3, 2)}));
        auto shortBytes = piece(3, 2);
        shortBytes.bytes.pop_back();
        QVERIFY(!assembleUpdate(0, 1, Compression::None, 5, {piece(0, 3), shortBytes}));
        // An update as received: its layout is checked before anything is decoded.
        auto bad = *whole;
        bad.pieces[1].second = 3; // runs past the end
        QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)decodeUpdate(bad));
        bad = *whole;
        bad.bytes.push_back(0);
        QVERIFY_THROWS_EXCEPTION(ProtocolError, checkUpdateLayout(bad));
        bad = *whole;
        const float inf = std::numeric_limits<float>::infinity();
        std::memcpy(bad.bytes.data(), &inf, sizeof inf);
        QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)decodeUpdate(bad));
    }
};

QTEST_GUILESS_MAIN(TestAveragedUpdate)
#include "tst_averagedupdate.moc"
