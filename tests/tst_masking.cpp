// Dynamic masking (model/Masking.h): BERT's 15% selection with the 80/10/10 split, special
// tokens untouched, labels exactly at the selected positions, at least one selection per
// sequence, determinism from the seed and the saved generator state.
#include "model/Masking.h"
#include "model/Tokenizer.h"
#include "util/Error.h"

#include "TestSupport.h"

#include <QtTest>

#include <functional>
#include <random>
#include <set>

using dedloc::DynamicMasker;
using dedloc::MaskedBatch;
using dedloc::SpecialTokens;

namespace {

constexpr int kVocab = 8000;
constexpr int kLength = 128;
constexpr int kSequences = 2000;

using dedloc::test::errorOf;

// `sequences` rows of [CLS] + random ids in [Count, vocab) + [SEP]. With padTail, every fourth
// row ends in a run of [PAD] before [SEP] and every tenth has an [UNK] in the middle, so special
// tokens also occur inside rows.
std::vector<std::int32_t> randomBatch(int sequences, int length, int vocab, std::uint64_t seed, bool padTail = false)
{
    std::mt19937_64 rng(seed);
    std::vector<std::int32_t> out;
    out.reserve(static_cast<std::size_t>(sequences) * static_cast<std::size_t>(length));
    for (int s = 0; s < sequences; ++s) {
        out.push_back(SpecialTokens::Cls);
        const int pads = padTail && s % 4 == 0 ? 1 + s % (length / 2) : 0;
        for (int i = 1; i < length - 1; ++i) {
            if (i >= length - 1 - pads)
                out.push_back(SpecialTokens::Pad);
            else if (padTail && s % 10 == 0 && i == length / 2)
                out.push_back(SpecialTokens::Unk);
            else
                out.push_back(static_cast<std::int32_t>(SpecialTokens::Count
                                                        + rng() % static_cast<std::uint64_t>(vocab - SpecialTokens::Count)));
        }
        out.push_back(SpecialTokens::Sep);
    }
    return out;
}

struct Counts {
    std::int64_t candidates = 0; // non-special positions
    std::int64_t selected = 0;
    std::int64_t masked = 0;    // became [MASK]
    std::int64_t replaced = 0;  // became another token
    std::int64_t unchanged = 0; // kept the original token
};

Counts count(const std::vector<std::int32_t> &tokens, const MaskedBatch &b)
{
    Counts c;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] >= SpecialTokens::Count)
            ++c.candidates;
        if (b.labels[i] == DynamicMasker::IgnoreLabel)
            continue;
        ++c.selected;
        if (b.inputIds[i] == SpecialTokens::Mask)
            ++c.masked;
        else if (b.inputIds[i] == tokens[i])
            ++c.unchanged;
        else
            ++c.replaced;
    }
    return c;
}

} // namespace

class TestMasking : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void fractions_data();
    void fractions();
    void randomReplacementsAreNonSpecialAndSpread();
    void specialTokensUntouchedAndLabelsExact();
    void atLeastOnePerSequence_data();
    void atLeastOnePerSequence();
    void forcedSelectionIsSpread();
    void probabilityOneSelectsEverything();
    void onlySpecialTokensSelectsNothing();
    void sameSeedSameOutput();
    void stateRoundTrip();
    void malformedStateIsRefused_data();
    void malformedStateIsRefused();
    void tinyVocabularyIsRefused_data();
    void tinyVocabularyIsRefused();
    void smallestVocabularyReplacesWithTheOnlyTextToken();
};

void TestMasking::fractions_data()
{
    QTest::addColumn<quint64>("seed");
    QTest::newRow("seed 1") << quint64(1);
    QTest::newRow("seed 20211206") << quint64(20211206);
}

void TestMasking::fractions()
{
    QFETCH(quint64, seed);
    const auto tokens = randomBatch(kSequences, kLength, kVocab, seed + 1000);
    DynamicMasker masker(kVocab, 0.15, seed);
    const MaskedBatch b = masker.mask(tokens, kLength);
    QCOMPARE(b.inputIds.size(), tokens.size());
    QCOMPARE(b.labels.size(), tokens.size());

    const Counts c = count(tokens, b);
    QCOMPARE(c.candidates, std::int64_t(kSequences) * (kLength - 2));
    QCOMPARE(b.maskedCount, c.selected);
    const double selected = double(c.selected) / double(c.candidates);
    const double masked = double(c.masked) / double(c.selected);
    const double replaced = double(c.replaced) / double(c.selected);
    const double unchanged = double(c.unchanged) / double(c.selected);
    qInfo("selected %.5f of %lld candidates; of the %lld selected: [MASK] %.5f, random %.5f, unchanged %.5f",
          selected, static_cast<long long>(c.candidates), static_cast<long long>(c.selected), masked, replaced,
          unchanged);
    QVERIFY2(std::abs(selected - 0.15) <= 0.005, qPrintable(QString::number(selected)));
    QVERIFY2(std::abs(masked - 0.80) <= 0.01, qPrintable(QString::number(masked)));
    QVERIFY2(std::abs(replaced - 0.10) <= 0.01, qPrintable(QString::number(replaced)));
    QVERIFY2(std::abs(unchanged - 0.10) <= 0.01, qPrintable(QString::number(unchanged)));
}

void TestMasking::randomReplacementsAreNonSpecialAndSpread()
{
    const auto tokens = randomBatch(kSequences, kLength, kVocab, 77);
    DynamicMasker masker(kVocab, 0.15, 78);
    const MaskedBatch b = masker.mask(tokens, kLength);
    std::set<std::int32_t> seen;
    std::int64_t low = 0, high = 0;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (b.labels[i] == DynamicMasker::IgnoreLabel || b.inputIds[i] == SpecialTokens::Mask
            || b.inputIds[i] == tokens[i])
            continue;
        const auto id = b.inputIds[i];
        QVERIFY2(id >= SpecialTokens::Count && id < kVocab, qPrintable(QString::number(id)));
        seen.insert(id);
        (id < kVocab / 2 ? low : high)++;
    }
    // ~3800 draws over 7995 ids: both halves of the vocabulary are hit about equally and most
    // draws are distinct (a constant or narrow replacement would fail here).
    QVERIFY2(seen.size() > 2500, qPrintable(QString::number(seen.size())));
    QVERIFY2(low > 1500 && high > 1500, qPrintable(QStringLiteral("%1 / %2").arg(low).arg(high)));
}

void TestMasking::specialTokensUntouchedAndLabelsExact()
{
    const auto tokens = randomBatch(500, kLength, kVocab, 5, /*padTail=*/true);
    DynamicMasker masker(kVocab, 0.3, 6);
    const MaskedBatch b = masker.mask(tokens, kLength);
    std::int64_t labelled = 0;
    std::int64_t specials = 0;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] < SpecialTokens::Count) {
            ++specials;
            QCOMPARE(b.labels[i], DynamicMasker::IgnoreLabel);
            QCOMPARE(b.inputIds[i], tokens[i]);
            continue;
        }
        if (b.labels[i] == DynamicMasker::IgnoreLabel) {
            // not selected: the input is the original token
            QCOMPARE(b.inputIds[i], tokens[i]);
        } else {
            QCOMPARE(b.labels[i], std::int64_t(tokens[i]));
            ++labelled;
        }
    }
    QVERIFY(specials > 2 * 500); // the batch really contains [PAD]s and [UNK]s besides [CLS]/[SEP]
    QCOMPARE(b.maskedCount, labelled);
    QVERIFY(labelled > 0);
}

void TestMasking::atLeastOnePerSequence_data()
{
    QTest::addColumn<double>("probability");
    QTest::newRow("p = 1e-6") << 1e-6;
    QTest::newRow("p = 0") << 0.0;
}

void TestMasking::atLeastOnePerSequence()
{
    QFETCH(double, probability);
    const int sequences = 300;
    const auto tokens = randomBatch(sequences, kLength, kVocab, 9, /*padTail=*/true);
    DynamicMasker masker(kVocab, probability, 10);
    const MaskedBatch b = masker.mask(tokens, kLength);
    for (int s = 0; s < sequences; ++s) {
        int selected = 0;
        for (int i = 0; i < kLength; ++i) {
            const auto k = static_cast<std::size_t>(s * kLength + i);
            if (b.labels[k] != DynamicMasker::IgnoreLabel) {
                ++selected;
                QVERIFY(tokens[k] >= SpecialTokens::Count);
            }
        }
        // With p this small, exactly the forced one.
        QVERIFY2(selected == 1, qPrintable(QStringLiteral("sequence %1 has %2 selected").arg(s).arg(selected)));
    }
    QCOMPARE(b.maskedCount, std::int64_t(sequences));
}

void TestMasking::forcedSelectionIsSpread()
{
    // The forced position is drawn uniformly among the candidates, not always the first one.
    const auto tokens = randomBatch(kSequences, kLength, kVocab, 21);
    DynamicMasker masker(kVocab, 0.0, 22);
    const MaskedBatch b = masker.mask(tokens, kLength);
    std::set<int> positions;
    std::int64_t firstHalf = 0;
    for (int s = 0; s < kSequences; ++s)
        for (int i = 0; i < kLength; ++i)
            if (b.labels[static_cast<std::size_t>(s * kLength + i)] != DynamicMasker::IgnoreLabel) {
                positions.insert(i);
                firstHalf += i < kLength / 2;
            }
    QVERIFY(!positions.count(0) && !positions.count(kLength - 1)); // never [CLS]/[SEP]
    QVERIFY2(positions.size() > 110, qPrintable(QString::number(positions.size())));
    QVERIFY2(firstHalf > 850 && firstHalf < 1150, qPrintable(QString::number(firstHalf)));
}

void TestMasking::probabilityOneSelectsEverything()
{
    const auto tokens = randomBatch(100, kLength, kVocab, 31, /*padTail=*/true);
    DynamicMasker masker(kVocab, 1.0, 32);
    const MaskedBatch b = masker.mask(tokens, kLength);
    std::int64_t candidates = 0;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        const bool candidate = tokens[i] >= SpecialTokens::Count;
        candidates += candidate;
        QCOMPARE(b.labels[i] != DynamicMasker::IgnoreLabel, candidate);
    }
    QCOMPARE(b.maskedCount, candidates);
}

void TestMasking::onlySpecialTokensSelectsNothing()
{
    std::vector<std::int32_t> tokens;
    for (int s = 0; s < 3; ++s) {
        tokens.push_back(SpecialTokens::Cls);
        tokens.insert(tokens.end(), 6, SpecialTokens::Pad);
        tokens.push_back(SpecialTokens::Sep);
    }
    DynamicMasker masker(kVocab, 0.5, 1);
    const MaskedBatch b = masker.mask(tokens, 8);
    QCOMPARE(b.maskedCount, std::int64_t(0));
    QVERIFY(b.inputIds == tokens);
    for (auto l : b.labels)
        QCOMPARE(l, DynamicMasker::IgnoreLabel);
}

void TestMasking::sameSeedSameOutput()
{
    const auto tokens = randomBatch(200, kLength, kVocab, 41);
    DynamicMasker a(kVocab, 0.15, 1234);
    DynamicMasker b(kVocab, 0.15, 1234);
    DynamicMasker c(kVocab, 0.15, 1235);
    const auto ma = a.mask(tokens, kLength);
    const auto mb = b.mask(tokens, kLength);
    const auto mc = c.mask(tokens, kLength);
    QVERIFY(ma.inputIds == mb.inputIds);
    QVERIFY(ma.labels == mb.labels);
    QCOMPARE(ma.maskedCount, mb.maskedCount);
    QCOMPARE(a.state(), b.state());
    // Another seed selects other positions.
    QVERIFY(ma.labels != mc.labels);
    // Masking is dynamic: the same tokens masked again give a different pattern.
    const auto again = a.mask(tokens, kLength);
    QVERIFY(again.labels != ma.labels);
}

void TestMasking::stateRoundTrip()
{
    const auto first = randomBatch(100, kLength, kVocab, 51);
    const auto second = randomBatch(100, kLength, kVocab, 52);
    DynamicMasker original(kVocab, 0.15, 99);
    (void)original.mask(first, kLength);
    const std::string saved = original.state();
    QVERIFY(!saved.empty());
    const auto expected = original.mask(second, kLength);

    DynamicMasker resumed(kVocab, 0.15, 12345); // another seed: only the state can make it agree
    QVERIFY(resumed.state() != saved);
    resumed.setState(saved);
    QCOMPARE(resumed.state(), saved);
    const auto actual = resumed.mask(second, kLength);
    QVERIFY(actual.inputIds == expected.inputIds);
    QVERIFY(actual.labels == expected.labels);
    QCOMPARE(actual.maskedCount, expected.maskedCount);
    QCOMPARE(resumed.state(), original.state());
}

void TestMasking::malformedStateIsRefused_data()
{
    QTest::addColumn<QString>("state");
    QTest::newRow("garbage") << QStringLiteral("garbage");
    QTest::newRow("empty") << QString();
    QTest::newRow("too few words") << QStringLiteral("1 2 3");
}

void TestMasking::malformedStateIsRefused()
{
    QFETCH(QString, state);
    DynamicMasker masker(kVocab, 0.15, 5);
    const std::string before = masker.state();
    const QString message = errorOf([&] { masker.setState(state.toStdString()); });
    QVERIFY2(message.contains(QLatin1String("malformed")), qPrintable(message));
    // A refused state leaves the generator as it was.
    QCOMPARE(masker.state(), before);
}

void TestMasking::tinyVocabularyIsRefused_data()
{
    QTest::addColumn<int>("vocab");
    QTest::newRow("5 (specials only)") << 5;
    QTest::newRow("1") << 1;
    QTest::newRow("0") << 0;
    QTest::newRow("-3") << -3;
}

void TestMasking::tinyVocabularyIsRefused()
{
    QFETCH(int, vocab);
    const QString message = errorOf([&] { DynamicMasker m(vocab, 0.15, 1); });
    QVERIFY2(message.contains(QString::number(vocab)) && message.contains(QLatin1String("too small")),
             qPrintable(message));
}

void TestMasking::smallestVocabularyReplacesWithTheOnlyTextToken()
{
    // Vocabulary 6: the only non-special id is 5, so every random replacement is 5.
    std::vector<std::int32_t> tokens;
    for (int s = 0; s < 400; ++s) {
        tokens.push_back(SpecialTokens::Cls);
        tokens.insert(tokens.end(), 14, 5);
        tokens.push_back(SpecialTokens::Sep);
    }
    DynamicMasker masker(6, 0.5, 3);
    const auto b = masker.mask(tokens, 16);
    for (std::size_t i = 0; i < tokens.size(); ++i)
        QVERIFY(b.inputIds[i] == tokens[i] || b.inputIds[i] == SpecialTokens::Mask);
    QVERIFY(b.maskedCount > 0);
}

QTEST_APPLESS_MAIN(TestMasking)
#include "tst_masking.moc"
