// Wire compression (core/compress/Compression.h): exactness, error bounds, sizes, bad input.
#include "compress/Compression.h"
#include "util/Error.h"

#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>

using namespace dedloc;

namespace {

std::vector<float> gaussian(std::size_t n, double mean, double sigma, unsigned seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(static_cast<float>(mean), static_cast<float>(sigma));
    std::vector<float> v(n);
    for (auto &x : v)
        x = d(rng);
    return v;
}

std::vector<float> roundTrip(Compression c, const std::vector<float> &v)
{
    const auto bytes = encode(c, v);
    if (bytes.size() != encodedBytes(c, v.size()))
        throw std::logic_error("encoded size differs from encodedBytes()");
    std::vector<float> out(v.size());
    decode(c, bytes, out);
    return out;
}

} // namespace

class TestCompression final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void noneIsExact()
    {
        const auto v = gaussian(10001, 0.3, 2.0, 1);
        QVERIFY(roundTrip(Compression::None, v) == v);
    }

    void halfConversionKnownValues_data()
    {
        QTest::addColumn<float>("value");
        QTest::addColumn<int>("bits");
        QTest::newRow("one") << 1.0F << 0x3C00;
        QTest::newRow("minus two") << -2.0F << 0xC000;
        QTest::newRow("max") << 65504.0F << 0x7BFF;
        QTest::newRow("saturates") << 1e6F << 0x7BFF;
        QTest::newRow("smallest subnormal") << std::ldexp(1.0F, -24) << 0x0001;
        QTest::newRow("half of smallest rounds to even 0") << std::ldexp(1.0F, -25) << 0x0000;
        QTest::newRow("smallest normal") << std::ldexp(1.0F, -14) << 0x0400;
        QTest::newRow("one third") << 1.0F / 3.0F << 0x3555;
        QTest::newRow("tie rounds to even") << 1.0F + std::ldexp(1.0F, -11) << 0x3C00;
        QTest::newRow("above tie rounds up") << 1.0F + 3 * std::ldexp(1.0F, -12) << 0x3C01;
        QTest::newRow("negative zero") << -0.0F << 0x8000;
    }

    void halfConversionKnownValues()
    {
        QFETCH(float, value);
        QFETCH(int, bits);
        QCOMPARE(static_cast<int>(floatToHalf(value)), bits);
    }

    void everyHalfRoundTrips()
    {
        for (std::uint32_t h = 0; h < 0x10000; ++h) {
            const auto half = static_cast<std::uint16_t>(h);
            if ((half & 0x7C00) == 0x7C00)
                continue; // infinities and NaNs: never produced by floatToHalf for finite input
            QCOMPARE(floatToHalf(halfToFloat(half)), half);
        }
    }

    void vectorisedFp16MatchesTheScalarReference()
    {
        // encode/decode may use F16C; they must agree bit for bit with floatToHalf/halfToFloat,
        // including saturation, subnormals, ties and the scalar tail (n not a multiple of 8).
        auto v = gaussian(10003, 0.0, 1.0, 9);
        const float specials[] = {65504.0F, 65519.0F, 65520.0F, 1e9F, -1e9F, std::ldexp(1.0F, -24),
                                  std::ldexp(1.0F, -25), std::ldexp(3.0F, -26), 1.0F + std::ldexp(1.0F, -11),
                                  -0.0F, 0.0F, 6.1e-5F, 1e-8F};
        for (std::size_t i = 0; i < std::size(specials); ++i)
            v[i * 7] = specials[i];
        for (std::size_t i = 0; i < v.size(); i += 3)
            v[i] *= std::ldexp(1.0F, static_cast<int>(i % 40) - 30); // spread over the exponent range
        const auto bytes = encode(Compression::Fp16, v);
        for (std::size_t i = 0; i < v.size(); ++i) {
            const auto h = static_cast<std::uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
            QCOMPARE(h, floatToHalf(v[i]));
        }
        std::vector<float> out(v.size());
        decode(Compression::Fp16, bytes, out);
        for (std::size_t i = 0; i < v.size(); ++i) {
            const auto h = static_cast<std::uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
            QCOMPARE(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(halfToFloat(h)));
        }
    }

    void fp16RelativeErrorIsBounded()
    {
        const auto v = gaussian(100000, 0.0, 1e-3, 2); // gradient-like magnitudes
        const auto out = roundTrip(Compression::Fp16, v);
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (std::abs(v[i]) >= std::ldexp(1.0F, -14)) // normal range: relative bound 2^-11
                QVERIFY(std::abs(out[i] - v[i]) <= std::abs(v[i]) * std::ldexp(1.0F, -11));
            else // subnormal range: absolute bound of half a subnormal step
                QVERIFY(std::abs(out[i] - v[i]) <= std::ldexp(1.0F, -25));
        }
    }

    void uniform8BitErrorIsBelowOneBinInRange()
    {
        const double sigma = 0.02, mean = 0.5;
        const auto v = gaussian(200000, mean, sigma, 3);
        const auto out = roundTrip(Compression::Uniform8Bit, v);
        const double bin = 6.0 * sigma / 256.0 * 1.01; // 1% slack: the codec uses the sample sigma
        double sumError = 0.0, sumSq = 0.0, inRangeSq = 0.0;
        std::size_t inRange = 0;
        for (std::size_t i = 0; i < v.size(); ++i) {
            const double e = out[i] - v[i];
            sumError += e;
            sumSq += e * e;
            if (std::abs(v[i] - mean) < 2.9 * sigma) {
                QVERIFY2(std::abs(e) <= bin, qPrintable(QStringLiteral("%1 -> %2").arg(v[i]).arg(out[i])));
                inRangeSq += e * e;
                ++inRange;
            }
        }
        const double rmsInRange = std::sqrt(inRangeSq / inRange), rms = std::sqrt(sumSq / v.size());
        qInfo("uniform 8-bit: RMS error %.4f bins in range, %.4f sigma overall", rmsInRange / bin, rms / sigma);
        // Bin means make the codec nearly unbiased; in range the RMS error is about a uniform
        // error's bin/sqrt(12) = 0.29 bins. Overall the 0.27% of values beyond +-3 sigma dominate.
        QVERIFY(std::abs(sumError / v.size()) < 1e-3 * sigma);
        QVERIFY(rmsInRange < 0.32 * bin);
        QVERIFY(rms < 0.03 * sigma);
        QCOMPARE(encodedBytes(Compression::Uniform8Bit, v.size()), v.size() + 8 + 1024);
    }

    // The layout byte by byte, against the definition: the header's mean and scale are the
    // values' mean and 6 sample sigmas / 256; each code is the nearest bin, clipped to 0..255;
    // each codebook entry is the mean of the values given its code. Outliers on both sides and
    // an odd length (the encoder's loops go four at a time) included.
    void uniform8BitLayoutMatchesItsDefinition()
    {
        auto v = gaussian(100003, -0.25, 0.01, 11);
        v[5] = 1.0F;   // clipped high
        v[77] = -1.0F; // clipped low
        const auto bytes = encode(Compression::Uniform8Bit, v);
        double mean = 0.0, var = 0.0;
        for (float x : v)
            mean += x;
        mean /= static_cast<double>(v.size());
        for (float x : v)
            var += (x - mean) * (x - mean);
        const double scale = 6.0 * std::sqrt(var / static_cast<double>(v.size() - 1)) / 256.0;
        float headerMean, headerScale, codebook[256];
        std::memcpy(&headerMean, bytes.data(), 4);
        std::memcpy(&headerScale, bytes.data() + 4, 4);
        std::memcpy(codebook, bytes.data() + 8, sizeof codebook);
        QCOMPARE(headerMean, static_cast<float>(mean));
        QCOMPARE(headerScale, static_cast<float>(scale));
        const std::uint8_t *codes = bytes.data() + 8 + 1024;
        QCOMPARE(codes[5], std::uint8_t{255});
        QCOMPARE(codes[77], std::uint8_t{0});
        std::vector<double> sum(256, 0.0);
        std::vector<int> count(256, 0);
        for (std::size_t i = 0; i < v.size(); ++i) {
            const double bin = (v[i] - mean) / scale + 128.0;
            const double nearest = std::clamp(std::round(bin), 0.0, 255.0);
            // A value within a millionth of a bin of an edge may go either way.
            if (std::abs(bin - std::round(bin)) < 0.5 - 1e-6 || bin < -0.5 || bin > 255.5)
                QCOMPARE(codes[i], static_cast<std::uint8_t>(nearest));
            sum[codes[i]] += v[i];
            ++count[codes[i]];
        }
        for (std::size_t b = 0; b < 256; ++b)
            if (count[b])
                QVERIFY2(std::abs(codebook[b] - sum[b] / count[b]) <= 1e-6 * std::abs(sum[b] / count[b]),
                         qPrintable(QStringLiteral("bin %1: %2 against %3").arg(b).arg(codebook[b]).arg(sum[b] / count[b])));
    }

    // Codes are std::lround(x * 127 / absmax), ties away from zero, exactly.
    void blockwise8BitCodesRoundToNearest()
    {
        auto v = gaussian(BlockwiseBlockElements + 7, 0.0, 1.0, 12);
        v[0] = 127.0F;                 // absmax: the scale is 1
        v[1] = 2.5F, v[2] = -2.5F;     // ties go away from zero
        v[3] = 0.49999997F, v[4] = -0.49999997F;
        for (std::size_t i = 5; i < BlockwiseBlockElements; ++i)
            v[i] = std::clamp(v[i] * 40.0F, -127.0F, 127.0F);
        const auto bytes = encode(Compression::Blockwise8Bit, v);
        const auto *codes = reinterpret_cast<const std::int8_t *>(bytes.data() + 8);
        QCOMPARE(codes[1], std::int8_t{3});
        QCOMPARE(codes[2], std::int8_t{-3});
        QCOMPARE(codes[3], std::int8_t{0});
        QCOMPARE(codes[4], std::int8_t{0});
        for (std::size_t i = 0; i < BlockwiseBlockElements; ++i)
            QCOMPARE(codes[i], static_cast<std::int8_t>(std::lround(v[i] * (127.0F / 127.0F))));
        // A block of subnormal values, whose 127 / absmax overflows a float: still the nearest
        // code, full scale at its absmax.
        std::vector<float> tiny(100);
        for (std::size_t i = 0; i < tiny.size(); ++i)
            tiny[i] = std::ldexp(static_cast<float>(i) - 50.0F, -140); // up to 50 * 2^-140
        const auto tinyBytes = encode(Compression::Blockwise8Bit, tiny);
        const auto *tinyCodes = reinterpret_cast<const std::int8_t *>(tinyBytes.data() + 4);
        for (std::size_t i = 0; i < tiny.size(); ++i)
            QCOMPARE(tinyCodes[i], static_cast<std::int8_t>(std::lround((static_cast<double>(i) - 50.0) * 127.0 / 50.0)));
    }

    void blockwise8BitErrorIsBoundedPerBlock()
    {
        // First block tiny, second large: each block keeps its own scale.
        auto v = gaussian(2 * BlockwiseBlockElements + 100, 0.0, 1e-4, 4);
        for (std::size_t i = BlockwiseBlockElements; i < 2 * BlockwiseBlockElements; ++i)
            v[i] *= 1e4F;
        const auto out = roundTrip(Compression::Blockwise8Bit, v);
        for (std::size_t b = 0; b * BlockwiseBlockElements < v.size(); ++b) {
            const std::size_t begin = b * BlockwiseBlockElements, end = std::min(v.size(), begin + BlockwiseBlockElements);
            float absmax = 0;
            for (std::size_t i = begin; i < end; ++i)
                absmax = std::max(absmax, std::abs(v[i]));
            for (std::size_t i = begin; i < end; ++i)
                QVERIFY(std::abs(out[i] - v[i]) <= absmax / 254.0F * 1.0001F);
        }
        QCOMPARE(encodedBytes(Compression::Blockwise8Bit, v.size()), v.size() + 3 * 4);
    }

    void sizeAdaptivePicksByElementCount()
    {
        QCOMPARE(effectiveCodec(Compression::SizeAdaptive, 65536), Compression::Fp16);
        QCOMPARE(effectiveCodec(Compression::SizeAdaptive, 65537), Compression::Uniform8Bit);
        QCOMPARE(encodedBytes(Compression::SizeAdaptive, 65536), std::size_t{131072});
        QCOMPARE(encodedBytes(Compression::SizeAdaptive, 65537), std::size_t{65537 + 1032});
        const auto v = gaussian(100, 0.0, 1.0, 5);
        QVERIFY(roundTrip(Compression::SizeAdaptive, v) == roundTrip(Compression::Fp16, v));
    }

    void constantAndEmptyTensors()
    {
        for (auto c : {Compression::None, Compression::Fp16, Compression::Uniform8Bit, Compression::Blockwise8Bit}) {
            const std::vector<float> zeros(5000, 0.0F), constant(5000, 0.25F);
            QVERIFY(roundTrip(c, zeros) == zeros);
            QVERIFY(roundTrip(c, constant) == constant);
            QVERIFY(roundTrip(c, {}).empty());
        }
    }

    void badInputIsRefused()
    {
        QVERIFY_THROWS_EXCEPTION(Error, (void)encode(Compression::Fp16, std::vector<float>{1.0F, NAN}));
        QVERIFY_THROWS_EXCEPTION(Error, (void)encode(Compression::Uniform8Bit, std::vector<float>{INFINITY}));
        // Found anywhere in a long vector, and named.
        for (float bad : {NAN, -INFINITY}) {
            std::vector<float> long_(10000, 0.5F);
            long_[7777] = bad;
            std::vector<std::uint8_t> bytes(encodedBytes(Compression::Fp16, long_.size()));
            try {
                encodeInto(Compression::Fp16, long_, bytes);
                QFAIL("a non-finite value was encoded");
            } catch (const Error &e) {
                QVERIFY2(std::string(e.what()).find("element 7777") != std::string::npos, e.what());
            }
        }
        std::vector<float> out(10);
        const std::vector<std::uint8_t> truncated(19);
        QVERIFY_THROWS_EXCEPTION(Error, decode(Compression::Fp16, truncated, out));
        const std::vector<std::uint8_t> oversized(1 << 20);
        QVERIFY_THROWS_EXCEPTION(Error, decode(Compression::Uniform8Bit, oversized, out));
    }
};

QTEST_APPLESS_MAIN(TestCompression)
#include "tst_compression.moc"
