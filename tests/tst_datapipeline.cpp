// Data pipeline (model/DataPipeline.h): packing into [CLS] + body + [SEP], the held-out
// validation tail, one shuffled pass visiting every sequence once, seeds, resume from a saved
// position, pass roll-over, and the errors for bad corpora and positions.
#include "TestSupport.h"

#include "model/DataPipeline.h"
#include "model/Tokenizer.h"
#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Log.h"

#include <QtTest>

#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

using dedloc::DataPipeline;
using dedloc::DataPosition;
using dedloc::SpecialTokens;
using dedloc::Tokenizer;
namespace fs = std::filesystem;

using Sequence = std::vector<std::int32_t>;

QT_BEGIN_NAMESPACE
namespace QTest {
template <> inline char *toString(const DataPosition &p)
{
    return qstrdup(qPrintable(QStringLiteral("{pass %1, index %2}").arg(p.pass).arg(p.index)));
}
} // namespace QTest
QT_END_NAMESPACE

namespace {

constexpr int kLength = 64;
constexpr double kValidation = 0.1;
constexpr std::size_t kSampleBytes = 300 * 1024;

using dedloc::test::errorOf;

std::vector<Sequence> rows(const std::vector<std::int32_t> &flat, int length)
{
    std::vector<Sequence> out;
    for (std::size_t at = 0; at + static_cast<std::size_t>(length) <= flat.size(); at += static_cast<std::size_t>(length))
        out.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(at),
                         flat.begin() + static_cast<std::ptrdiff_t>(at) + length);
    return out;
}

// What the header documents, worked out independently of the implementation: the cut is the
// last `fraction` of the bytes moved forward to the next line start; each part is tokenized line
// by line into one stream and cut into bodies of length - 2.
struct ExpectedSplit {
    std::size_t cut = 0;
    std::vector<int> train;
    std::vector<int> validation;
};

ExpectedSplit expectedSplit(const Tokenizer &tokenizer, const std::string &text, double fraction)
{
    ExpectedSplit s;
    s.cut = text.size() - static_cast<std::size_t>(static_cast<double>(text.size()) * fraction);
    if (s.cut > 0 && text[s.cut - 1] != '\n')
        s.cut = text.find('\n', s.cut) + 1;
    auto tokenize = [&](std::size_t begin, std::size_t end, std::vector<int> &out) {
        while (begin < end) {
            const std::size_t nl = std::min(text.find('\n', begin), end);
            if (nl > begin) {
                const auto ids = tokenizer.encode(std::string_view(text).substr(begin, nl - begin));
                out.insert(out.end(), ids.begin(), ids.end());
            }
            begin = nl + 1;
        }
    };
    tokenize(0, s.cut, s.train);
    tokenize(s.cut, text.size(), s.validation);
    return s;
}

std::vector<Sequence> packed(const std::vector<int> &stream, int length)
{
    const auto body = static_cast<std::size_t>(length - 2);
    std::vector<Sequence> out;
    for (std::size_t at = 0; at + body <= stream.size(); at += body) {
        Sequence s{SpecialTokens::Cls};
        s.insert(s.end(), stream.begin() + static_cast<std::ptrdiff_t>(at),
                 stream.begin() + static_cast<std::ptrdiff_t>(at + body));
        s.push_back(SpecialTokens::Sep);
        out.push_back(std::move(s));
    }
    return out;
}

std::vector<Sequence> takeAll(DataPipeline &p, std::size_t count, int chunk)
{
    std::vector<Sequence> out;
    while (out.size() < count) {
        const int n = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(chunk), count - out.size()));
        for (auto &r : rows(p.nextTrainBatch(n), p.sequenceLength()))
            out.push_back(std::move(r));
    }
    return out;
}

} // namespace

class TestDataPipeline : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();

    void sequencesArePacked();
    void countsAreConsistent();
    void onePassVisitsEverySequenceOnce();
    void sameSeedSameBatches();
    void differentSeedsDifferentOrders();
    void everyPlaceOfThePermutationIsShuffled();
    void resumeFromPosition_data();
    void resumeFromPosition();
    void passRollsOverToANewPermutation();
    void validationIsDeterministicAndHeldOut();
    void validationTextComesFromTheTail();
    void noValidationSplit();
    void severalFilesAreJoinedAtLineEnds();

    void missingCorpusIsAnError();
    void noCorpusFilesIsAnError();
    void tooSmallCorpusIsAnError();
    void tooSmallValidationSplitIsAnError();
    void tooShortSequenceIsAnError();
    void positionPastTheEndIsAnError();

private:
    [[nodiscard]] std::unique_ptr<DataPipeline> make(std::uint64_t seed, double fraction = kValidation) const
    {
        return std::make_unique<DataPipeline>(*m_tokenizer, std::vector<fs::path>{m_corpus}, fraction, kLength, seed);
    }

    std::unique_ptr<Tokenizer> m_tokenizer;
    QTemporaryDir m_dir;
    fs::path m_corpus;
    std::string m_text;
    ExpectedSplit m_expected;
    std::vector<std::string> m_log; // messages of the "data" category, captured instead of printed
};

void TestDataPipeline::initTestCase()
{
    dedloc::log::setSink([this](dedloc::log::Level, std::string_view category, std::string_view message) {
        if (category == "data")
            m_log.emplace_back(message);
    });
    QVERIFY(m_dir.isValid());
    m_tokenizer = std::make_unique<Tokenizer>(dedloc::test::sourceResources() / "default-run" / "tokenizer.model");
    m_corpus = fs::path(m_dir.path().toStdString()) / "sample.txt";
    dedloc::test::writeCorpusSample(m_corpus, kSampleBytes);
    m_text = dedloc::readWholeFile(m_corpus);
    QVERIFY(m_text.size() > kSampleBytes - 10000 && m_text.size() <= kSampleBytes);
    QCOMPARE(m_text.back(), '\n');
    m_expected = expectedSplit(*m_tokenizer, m_text, kValidation);
}

void TestDataPipeline::cleanupTestCase() { dedloc::log::setSink(nullptr); }

void TestDataPipeline::sequencesArePacked()
{
    auto p = make(1);
    QCOMPARE(p->sequenceLength(), kLength);
    const auto batch = p->nextTrainBatch(10);
    QCOMPARE(batch.size(), std::size_t(10 * kLength));
    for (const auto &row : rows(batch, kLength)) {
        QCOMPARE(row.front(), std::int32_t(SpecialTokens::Cls));
        QCOMPARE(row.back(), std::int32_t(SpecialTokens::Sep));
        for (std::size_t i = 1; i + 1 < row.size(); ++i) {
            // Text only: [UNK] can come from a rare character, no other special id can.
            QVERIFY2(row[i] >= SpecialTokens::Count || row[i] == SpecialTokens::Unk,
                     qPrintable(QStringLiteral("id %1 at %2").arg(row[i]).arg(i)));
            QVERIFY(row[i] < m_tokenizer->vocabSize());
        }
    }
    const auto validation = p->validationBatch(4);
    QCOMPARE(validation.size(), std::size_t(4 * kLength));
    for (const auto &row : rows(validation, kLength)) {
        QCOMPARE(row.front(), std::int32_t(SpecialTokens::Cls));
        QCOMPARE(row.back(), std::int32_t(SpecialTokens::Sep));
        QVERIFY(std::count(row.begin() + 1, row.end() - 1, SpecialTokens::Cls) == 0);
        QVERIFY(std::count(row.begin() + 1, row.end() - 1, SpecialTokens::Sep) == 0);
    }
}

void TestDataPipeline::countsAreConsistent()
{
    auto p = make(1);
    QCOMPARE(p->trainTokenCount(), m_expected.train.size());
    QCOMPARE(p->trainSequenceCount(), p->trainTokenCount() / (kLength - 2));
    QCOMPARE(p->validationSequenceCount(), m_expected.validation.size() / (kLength - 2));
    QVERIFY(p->trainSequenceCount() > 200);
    QVERIFY(p->validationSequenceCount() > 20);
    // Roughly a tenth of the tokens is held out (the split is by bytes, not tokens).
    const double heldOut = double(m_expected.validation.size()) / double(m_expected.train.size() + m_expected.validation.size());
    QVERIFY2(heldOut > 0.07 && heldOut < 0.13, qPrintable(QString::number(heldOut)));
    QCOMPARE(p->seed(), std::uint64_t(1));
    QCOMPARE(p->position(), (DataPosition{0, 0}));
}

void TestDataPipeline::onePassVisitsEverySequenceOnce()
{
    auto p = make(2024);
    const std::size_t count = p->trainSequenceCount();
    const auto pass = takeAll(*p, count, 7); // batches that do not divide the count
    QCOMPARE(pass.size(), count);
    QCOMPARE(p->position(), (DataPosition{0, count}));

    const std::set<Sequence> seen(pass.begin(), pass.end());
    QCOMPARE(seen.size(), count); // no sequence twice
    const auto inOrder = packed(m_expected.train, kLength);
    QCOMPARE(inOrder.size(), count);
    QVERIFY(seen == std::set<Sequence>(inOrder.begin(), inOrder.end())); // and every one once

    // Shuffled: the pass is not the file order, and not merely rotated.
    QVERIFY(pass != inOrder);
    std::size_t inPlace = 0;
    for (std::size_t i = 0; i < count; ++i)
        inPlace += pass[i] == inOrder[i];
    QVERIFY2(inPlace < count / 20, qPrintable(QString::number(inPlace)));
}

void TestDataPipeline::sameSeedSameBatches()
{
    auto a = make(77);
    auto b = make(77);
    for (int i = 0; i < 6; ++i)
        QVERIFY2(a->nextTrainBatch(9) == b->nextTrainBatch(9), qPrintable(QString::number(i)));
    QCOMPARE(a->position(), b->position());
}

void TestDataPipeline::differentSeedsDifferentOrders()
{
    auto a = make(1);
    auto b = make(2);
    const auto ra = rows(a->nextTrainBatch(16), kLength);
    const auto rb = rows(b->nextTrainBatch(16), kLength);
    QVERIFY(ra != rb);
    std::size_t same = 0;
    for (std::size_t i = 0; i < ra.size(); ++i)
        same += ra[i] == rb[i];
    QVERIFY2(same <= 1, qPrintable(QString::number(same)));
    // The orders differ, the sequences do not: the whole passes hold the same set.
    a = make(1);
    b = make(2);
    const auto pa = takeAll(*a, a->trainSequenceCount(), 50);
    const auto pb = takeAll(*b, b->trainSequenceCount(), 50);
    QVERIFY(std::set<Sequence>(pa.begin(), pa.end()) == std::set<Sequence>(pb.begin(), pb.end()));
}

void TestDataPipeline::everyPlaceOfThePermutationIsShuffled()
{
    // Over 24 seeds, the first and the last sequence of a pass are (nearly) always different
    // ones: a shuffle that leaves an end of the permutation fixed fails here.
    std::set<Sequence> firsts, lasts;
    for (std::uint64_t seed = 100; seed < 124; ++seed) {
        auto p = make(seed);
        const auto pass = takeAll(*p, p->trainSequenceCount(), 400);
        firsts.insert(pass.front());
        lasts.insert(pass.back());
    }
    QVERIFY2(firsts.size() >= 20, qPrintable(QString::number(firsts.size())));
    QVERIFY2(lasts.size() >= 20, qPrintable(QString::number(lasts.size())));
}

void TestDataPipeline::resumeFromPosition_data()
{
    // The position is saved after consuming pass * count + offset sequences (a negative offset
    // counts from the end of that pass).
    QTest::addColumn<int>("pass");
    QTest::addColumn<int>("offset");
    QTest::newRow("start") << 0 << 0;
    QTest::newRow("within the first pass") << 0 << 15;
    QTest::newRow("next batch crosses into pass 1") << 0 << -2;
    QTest::newRow("exactly at the end of pass 0") << 1 << 0;
    QTest::newRow("within pass 1") << 1 << 3;
}

void TestDataPipeline::resumeFromPosition()
{
    QFETCH(int, pass);
    QFETCH(int, offset);
    auto original = make(31);
    const std::size_t count = original->trainSequenceCount();
    const std::size_t n = static_cast<std::size_t>(pass) * count
                          + (offset >= 0 ? static_cast<std::size_t>(offset) : count - static_cast<std::size_t>(-offset));
    (void)takeAll(*original, n, 13);
    const DataPosition saved = original->position();
    const DataPosition expected = n <= count ? DataPosition{0, n} : DataPosition{1, n - count};
    QCOMPARE(saved, expected);
    const auto next = original->nextTrainBatch(5);
    const auto after = original->nextTrainBatch(5);

    auto resumed = make(31);
    resumed->setPosition(saved);
    QCOMPARE(resumed->position(), saved);
    QVERIFY(resumed->nextTrainBatch(5) == next);
    QVERIFY(resumed->nextTrainBatch(5) == after);
    QCOMPARE(resumed->position(), original->position());

    // Resuming with another seed continues another order: the position alone is not enough.
    auto other = make(32);
    other->setPosition(saved);
    QVERIFY(other->nextTrainBatch(5) != next);
}

void TestDataPipeline::passRollsOverToANewPermutation()
{
    auto p = make(5);
    const std::size_t count = p->trainSequenceCount();
    const auto pass0 = takeAll(*p, count, 64);
    QCOMPARE(p->position(), (DataPosition{0, count}));
    m_log.clear();
    const auto first = rows(p->nextTrainBatch(1), kLength);
    QCOMPARE(p->position(), (DataPosition{1, 1}));
    QCOMPARE(m_log, std::vector<std::string>{"starting data pass 1"});
    auto pass1 = first;
    for (auto &r : takeAll(*p, count - 1, 64))
        pass1.push_back(std::move(r));
    QCOMPARE(p->position(), (DataPosition{1, count}));

    QVERIFY(pass1 != pass0); // a fresh permutation
    std::size_t inPlace = 0;
    for (std::size_t i = 0; i < count; ++i)
        inPlace += pass0[i] == pass1[i];
    QVERIFY2(inPlace < count / 20, qPrintable(QString::number(inPlace)));
    QVERIFY(std::set<Sequence>(pass0.begin(), pass0.end()) == std::set<Sequence>(pass1.begin(), pass1.end()));

    (void)p->nextTrainBatch(1);
    QCOMPARE(p->position(), (DataPosition{2, 1}));
}

void TestDataPipeline::validationIsDeterministicAndHeldOut()
{
    auto p = make(1);
    const auto v1 = p->validationBatch(6);
    (void)p->nextTrainBatch(20); // training does not move the validation set
    QVERIFY(p->validationBatch(6) == v1);
    QVERIFY(make(999)->validationBatch(6) == v1); // nor does the seed
    // The first validation sequences are the held-out tail's stream in file order.
    const auto expected = packed(m_expected.validation, kLength);
    QCOMPARE(rows(v1, kLength), std::vector<Sequence>(expected.begin(), expected.begin() + 6));
    // Asking for more than there is gives all of them.
    const auto all = p->validationBatch(1000000);
    QCOMPARE(all.size(), p->validationSequenceCount() * kLength);
    QCOMPARE(rows(all, kLength), expected);
    QVERIFY(p->validationBatch(0).empty());

    // No validation sequence is also a training sequence.
    const auto train = takeAll(*p, p->trainSequenceCount(), 100);
    const std::set<Sequence> trainSet(train.begin(), train.end());
    for (const auto &v : expected)
        QVERIFY(!trainSet.count(v));
}

void TestDataPipeline::validationTextComesFromTheTail()
{
    auto p = make(1);
    const auto first = rows(p->validationBatch(1), kLength).at(0);
    const std::string decoded = m_tokenizer->decode(std::vector<int>(first.begin() + 1, first.end() - 1));
    // Decoding joins lines with spaces and the body may start or end inside a word: drop the
    // first and last words and look for the rest in the file, with line ends as spaces.
    const auto from = decoded.find(' ');
    const auto to = decoded.rfind(' ');
    QVERIFY(from != std::string::npos && to > from + 40);
    const std::string fragment = decoded.substr(from + 1, to - from - 1);
    std::string flat = m_text;
    std::replace(flat.begin(), flat.end(), '\n', ' ');

    // The cut as the header defines it: the last 10% of the bytes, moved forward to a line start.
    const std::size_t cut = m_expected.cut;
    QVERIFY(cut >= m_text.size() - static_cast<std::size_t>(m_text.size() * kValidation));
    QVERIFY(cut < m_text.size() - static_cast<std::size_t>(m_text.size() * kValidation) + 10000);
    QCOMPARE(m_text[cut - 1], '\n');

    const auto at = flat.find(fragment);
    QVERIFY2(at != std::string::npos, qPrintable(QString::fromStdString(fragment)));
    QVERIFY2(at >= cut, qPrintable(QStringLiteral("found at byte %1, the cut is at %2").arg(at).arg(cut)));
    // flat.find gives the first occurrence, so at >= cut also means the text occurs nowhere before
    // the cut. The validation stream starts right at the cut: the fragment begins within the
    // first (dropped) word after it.
    QVERIFY2(at < cut + 200, qPrintable(QStringLiteral("found at byte %1, the cut is at %2").arg(at).arg(cut)));
}

void TestDataPipeline::noValidationSplit()
{
    auto p = make(1, 0.0);
    QCOMPARE(p->validationSequenceCount(), std::size_t(0));
    QVERIFY(p->validationBatch(8).empty());
    QCOMPARE(p->trainTokenCount(), m_expected.train.size() + m_expected.validation.size());
}

void TestDataPipeline::severalFilesAreJoinedAtLineEnds()
{
    // The sample split at a line end into two files, the first without its final newline: the
    // pipeline must join them at a line end, giving exactly the single file's streams.
    const auto middle = m_text.find('\n', m_text.size() / 2);
    QVERIFY(middle != std::string::npos);
    const fs::path a = fs::path(m_dir.path().toStdString()) / "a.txt";
    const fs::path b = fs::path(m_dir.path().toStdString()) / "b.txt";
    dedloc::writeFileAtomically(a, m_text.substr(0, middle)); // no trailing '\n'
    dedloc::writeFileAtomically(b, m_text.substr(middle + 1));
    DataPipeline two(*m_tokenizer, {a, b}, kValidation, kLength, 9);
    auto one = make(9);
    QCOMPARE(two.trainTokenCount(), one->trainTokenCount());
    QCOMPARE(two.validationSequenceCount(), one->validationSequenceCount());
    QVERIFY(two.nextTrainBatch(20) == one->nextTrainBatch(20));
    QVERIFY(two.validationBatch(3) == one->validationBatch(3));
}

void TestDataPipeline::missingCorpusIsAnError()
{
    const fs::path missing = fs::path(m_dir.path().toStdString()) / "no-such-corpus.txt";
    const QString message = errorOf([&] { DataPipeline p(*m_tokenizer, {m_corpus, missing}, kValidation, kLength, 1); });
    QVERIFY2(message.contains(QString::fromStdString(missing.string())), qPrintable(message));
}

void TestDataPipeline::noCorpusFilesIsAnError()
{
    const QString message = errorOf([&] { DataPipeline p(*m_tokenizer, {}, kValidation, kLength, 1); });
    QVERIFY2(message.contains(QLatin1String("no corpus")), qPrintable(message));
}

void TestDataPipeline::tooSmallCorpusIsAnError()
{
    const fs::path tiny = fs::path(m_dir.path().toStdString()) / "tiny.txt";
    dedloc::writeFileAtomically(tiny, "আমার সোনার বাংলা।\nআমি তোমায় ভালোবাসি।\n");
    const QString message = errorOf([&] { DataPipeline p(*m_tokenizer, {tiny}, 0.0, kLength, 1); });
    QVERIFY2(message.contains(QLatin1String("too small")) && message.contains(QString::number(kLength)),
             qPrintable(message));
}

void TestDataPipeline::tooSmallValidationSplitIsAnError()
{
    // 3 KB of text: one training sequence fits, but 0.1% of it is less than one line.
    const fs::path small = fs::path(m_dir.path().toStdString()) / "small.txt";
    dedloc::test::writeCorpusSample(small, 3000);
    const QString message = errorOf([&] { DataPipeline p(*m_tokenizer, {small}, 0.001, 16, 1); });
    QVERIFY2(message.contains(QLatin1String("validation")), qPrintable(message));
}

void TestDataPipeline::tooShortSequenceIsAnError()
{
    const QString message = errorOf([&] { DataPipeline p(*m_tokenizer, {m_corpus}, kValidation, 2, 1); });
    QVERIFY2(message.contains(QLatin1String("sequence length")), qPrintable(message));
}

void TestDataPipeline::positionPastTheEndIsAnError()
{
    auto p = make(3);
    const std::size_t count = p->trainSequenceCount();
    (void)p->nextTrainBatch(4);
    const DataPosition before = p->position();
    const QString message = errorOf([&] { p->setPosition({0, count + 1}); });
    QVERIFY2(message.contains(QString::number(count + 1)) && message.contains(QString::number(count)),
             qPrintable(message));
    QCOMPARE(p->position(), before); // a refused position changes nothing
    QVERIFY(!errorOf([&] { p->setPosition({7, count + 1000}); }).startsWith(QLatin1String("<no")));
    // The end of a pass itself is a valid position: the next batch starts the next pass.
    p->setPosition({0, count});
    (void)p->nextTrainBatch(1);
    QCOMPARE(p->position(), (DataPosition{1, 1}));
}

QTEST_APPLESS_MAIN(TestDataPipeline)
#include "tst_datapipeline.moc"
