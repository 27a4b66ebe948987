// The sparse codecs (core/compress/Compression.h TopK4Bit and SparseFp16, SparseCodecs.cpp):
// which elements are kept, the error bounds, idempotence, sizes, and hostile bytes.
#include "AllReduceSwarm.h" // randomVector
#include "compress/Compression.h"
#include "compress/LittleEndian.h"
#include "util/Error.h"

#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

using namespace dedloc;

namespace {

constexpr std::size_t Block = BlockwiseBlockElements;

// n values of N(0, 1).
std::vector<float> gaussian(std::size_t n, unsigned seed)
{
    return test::randomVector(n, seed);
}

std::vector<float> roundTrip(Compression c, std::span<const float> v)
{
    std::vector<float> out(v.size());
    decode(c, encode(c, v), out);
    return out;
}

bool throwsOnDecode(Compression c, const std::vector<std::uint8_t> &bytes, std::size_t elements)
{
    std::vector<float> out(elements);
    try {
        decode(c, bytes, out);
    } catch (const Error &) {
        return true;
    }
    return false;
}

} // namespace

class TestSparseCodecs final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // 2 full blocks (4 + 2 * 64 bytes each) and one of 100 elements (4 + 2 * ceil(100 / 64)).
    void topKSizes()
    {
        QCOMPARE(encodedBytes(Compression::TopK4Bit, 2 * Block + 100), std::size_t(2 * 132 + 8));
        QCOMPARE(encodedBytes(Compression::TopK4Bit, 1), std::size_t(6));
        QCOMPARE(encodedBytes(Compression::TopK4Bit, 0), std::size_t(0));
        const auto v = gaussian(2 * Block + 100, 1);
        QCOMPARE(encode(Compression::TopK4Bit, v).size(), encodedBytes(Compression::TopK4Bit, v.size()));
        QCOMPARE(resultCodec(Compression::TopK4Bit), Compression::SparseFp16);
        QCOMPARE(resultCodec(Compression::Fp16), Compression::Fp16);
        QCOMPARE(codecAlignment(Compression::TopK4Bit), Block);
        QCOMPARE(codecAlignment(Compression::Blockwise8Bit), std::size_t(1));
        QCOMPARE(compressionFromName("topk4bit"), std::optional(Compression::TopK4Bit));
        QVERIFY(compressionChoices().find("sparse_fp16") == std::string::npos);
    }

    // Each block keeps exactly its k largest magnitudes, each within s / 2 of its value (s the
    // block's absmax / 7), and decodes every other element to 0.
    void topKKeepsTheLargestWithinHalfAStep()
    {
        const std::size_t n = 3 * Block + 1000;
        const auto v = gaussian(n, 2);
        const auto out = roundTrip(Compression::TopK4Bit, v);
        for (std::size_t begin = 0; begin < n; begin += Block) {
            const std::size_t len = std::min(Block, n - begin);
            const std::size_t k = (len * TopKKeptPerBlock + Block - 1) / Block;
            std::vector<std::size_t> order(len);
            std::iota(order.begin(), order.end(), begin);
            std::sort(order.begin(), order.end(), [&](auto a, auto b) { return std::abs(v[a]) > std::abs(v[b]); });
            const float absmax = std::abs(v[order[0]]);
            const double step = absmax / 7.0;
            for (std::size_t r = 0; r < len; ++r) {
                const auto i = order[r];
                if (r < k) {
                    QVERIFY2(std::abs(out[i] - v[i]) <= step / 2 * (1 + 1e-5), qPrintable(QString::number(i)));
                    QVERIFY(out[i] != 0.0F || std::abs(v[i]) <= step / 2 * (1 + 1e-5));
                } else {
                    QCOMPARE(out[i], 0.0F);
                }
            }
            QCOMPARE(std::abs(out[order[0]]), std::abs(7.0F * std::bit_cast<float>(
                                                                    std::bit_cast<std::uint32_t>(absmax / 7.0F) & ~7U)));
        }
    }

    // Encoding decoded values again gives the same values bit for bit, and block-aligned parts
    // encode to exactly the whole vector's decoding: what the all-reduce and error feedback rely on.
    void topKIsIdempotentAndPartsAgreeWithTheWhole()
    {
        const std::size_t n = 5 * Block + 77;
        auto v = gaussian(n, 3);
        v[10] = 1e30F; // extreme scales stay exact too
        v[Block + 5] = 1e-30F;
        const auto once = roundTrip(Compression::TopK4Bit, v);
        QVERIFY(roundTrip(Compression::TopK4Bit, once) == once);
        std::vector<float> parts(n);
        for (std::size_t begin = 0; begin < n; begin += 2 * Block) {
            const std::size_t len = std::min(2 * Block, n - begin);
            const auto piece = roundTrip(Compression::TopK4Bit, std::span<const float>(once).subspan(begin, len));
            std::copy(piece.begin(), piece.end(), parts.begin() + static_cast<std::ptrdiff_t>(begin));
        }
        QVERIFY(parts == once);
        const std::vector<float> zeros(Block, 0.0F);
        QVERIFY(roundTrip(Compression::TopK4Bit, zeros) == zeros);
    }

    void topKRefusesHostileBytes()
    {
        const auto v = gaussian(Block + 100, 4);
        const auto good = encode(Compression::TopK4Bit, v);
        QVERIFY(!throwsOnDecode(Compression::TopK4Bit, good, v.size()));
        auto bad = good;
        le::putF32(bad.data(), std::nanf(""));
        QVERIFY(throwsOnDecode(Compression::TopK4Bit, bad, v.size())); // NaN scale
        bad = good;
        le::putF32(bad.data(), -1.0F);
        QVERIFY(throwsOnDecode(Compression::TopK4Bit, bad, v.size())); // negative scale
        bad = good;
        le::putU16(bad.data() + 132 + 4, static_cast<std::uint16_t>((100 << 4) | 9)); // past the 100-element block
        QVERIFY(throwsOnDecode(Compression::TopK4Bit, bad, v.size()));
        bad = good;
        le::putU16(bad.data() + 4, static_cast<std::uint16_t>(5 << 4)); // code -8
        QVERIFY(throwsOnDecode(Compression::TopK4Bit, bad, v.size()));
        bad = good;
        le::putU16(bad.data() + 4, static_cast<std::uint16_t>((5 << 4) | 9));
        le::putU16(bad.data() + 6, static_cast<std::uint16_t>((5 << 4) | 10)); // element 5 twice
        QVERIFY(throwsOnDecode(Compression::TopK4Bit, bad, v.size()));
        bad = good;
        bad.pop_back();
        QVERIFY(throwsOnDecode(Compression::TopK4Bit, bad, v.size()));
    }

    // SparseFp16 carries the nonzero elements as fp16 (2 bytes per block, 4 per value) and
    // reads its own length from its counts.
    void sparseFp16RoundTripAndLength()
    {
        std::vector<float> v(2 * Block + 10, 0.0F);
        v[3] = 1.5F;
        v[Block - 1] = -0.1F;
        v[Block + 7] = 3e-9F; // rounds to fp16 zero: left out
        v[2 * Block + 9] = 70000.0F; // saturates as in fp16
        const auto bytes = encode(Compression::SparseFp16, v);
        QCOMPARE(bytes.size(), std::size_t(3 * 2 + 3 * 4));
        QCOMPARE(encodedLength(Compression::SparseFp16, bytes, v.size()), bytes.size());
        QCOMPARE(leastEncodedBytes(Compression::SparseFp16, v.size()), std::size_t(3 * 2)); // the counts alone
        QCOMPARE(leastEncodedBytes(Compression::Fp16, v.size()), encodedBytes(Compression::Fp16, v.size()));
        std::vector<std::uint8_t> longer = bytes;
        longer.insert(longer.end(), {1, 2, 3});
        QCOMPARE(encodedLength(Compression::SparseFp16, longer, v.size()), bytes.size());
        std::vector<float> out(v.size());
        decode(Compression::SparseFp16, bytes, out);
        for (std::size_t i = 0; i < v.size(); ++i)
            QCOMPARE(out[i], i == Block + 7 ? 0.0F : halfToFloat(floatToHalf(v[i])));
        QVERIFY(encodedBytes(Compression::SparseFp16, v.size()) >= encode(Compression::SparseFp16, gaussian(v.size(), 5)).size());
        std::vector<std::uint8_t> into(encodedBytes(Compression::SparseFp16, v.size()));
        QVERIFY_THROWS_EXCEPTION(Error, encodeInto(Compression::SparseFp16, v, into));
        QVERIFY(throwsOnDecode(Compression::SparseFp16, longer, v.size())); // trailing bytes
    }

    void sparseFp16RefusesHostileBytes()
    {
        std::vector<float> v(Block + 10, 0.0F);
        v[1] = 1.0F;
        v[2] = 2.0F;
        const auto good = encode(Compression::SparseFp16, v); // [2][1,2][h,h] [0]
        QVERIFY(!throwsOnDecode(Compression::SparseFp16, good, v.size()));
        auto bad = good;
        le::putU16(bad.data() + 4, 1); // indices 1, 1
        QVERIFY(throwsOnDecode(Compression::SparseFp16, bad, v.size()));
        bad = good;
        le::putU16(bad.data() + 8, 0x7C00); // +inf
        QVERIFY(throwsOnDecode(Compression::SparseFp16, bad, v.size()));
        bad = good;
        le::putU16(bad.data() + 10, 11); // the 10-element block counts 11
        QVERIFY_THROWS_EXCEPTION(Error, (void)encodedLength(Compression::SparseFp16, bad, v.size()));
        bad = good;
        le::putU16(bad.data() + 10, 1); // counts one value the bytes do not hold
        QVERIFY(throwsOnDecode(Compression::SparseFp16, bad, v.size()));
        bad = good;
        le::putU16(bad.data(), 3);
        QVERIFY(throwsOnDecode(Compression::SparseFp16, bad, v.size()));
        QVERIFY(throwsOnDecode(Compression::SparseFp16, {}, v.size()));
        std::vector<float> one(10, 0.0F);
        one[9] = 1.0F;
        auto past = encode(Compression::SparseFp16, one);
        le::putU16(past.data() + 2, 10); // index 10 of a 10-element block
        QVERIFY(throwsOnDecode(Compression::SparseFp16, past, one.size()));
    }
};

QTEST_APPLESS_MAIN(TestSparseCodecs)
#include "tst_sparsecodecs.moc"
