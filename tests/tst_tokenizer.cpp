// SentencePiece tokenizer (model/Tokenizer.h): the bundled model's vocabulary and special ids,
// lossless Bengali round trips, compression, refusal of missing, corrupt and foreign models,
// and training a small model.
#include "TestSupport.h"

#include "model/Tokenizer.h"
#include "util/AtomicFile.h"
#include "util/Error.h"

#include <QtTest>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

using dedloc::SpecialTokens;
using dedloc::Tokenizer;
namespace fs = std::filesystem;

namespace {

fs::path bundledModel() { return dedloc::test::sourceResources() / "default-run" / "tokenizer.model"; }
fs::path bundledCorpus() { return dedloc::test::sourceResources() / "default-run" / "corpus" / "bn_pd_literature.txt"; }

using dedloc::test::errorOf;

// Line `index` (0-based) of the bundled corpus; the file is pinned by its SHA-256 in the manifest.
std::string corpusLine(int index)
{
    std::ifstream in(bundledCorpus());
    std::string line;
    for (int i = 0; i <= index; ++i)
        if (!std::getline(in, line))
            return {};
    return line;
}

std::size_t codePoints(const std::string &utf8)
{
    std::size_t n = 0;
    for (unsigned char c : utf8)
        n += (c & 0xC0) != 0x80;
    return n;
}

QByteArray bytes(const std::string &s) { return QByteArray(s.data(), static_cast<qsizetype>(s.size())); }
std::string str(const QByteArray &b) { return std::string(b.constData(), static_cast<std::size_t>(b.size())); }

// The bundled model with every occurrence of `from` replaced by `to` (same length, so the
// protobuf stays well-formed): a valid SentencePiece model whose special piece has another name.
std::string modelWithRenamedPiece(const std::string &from, const std::string &to)
{
    std::string model = dedloc::readWholeFile(bundledModel());
    std::size_t replaced = 0;
    for (std::size_t at = model.find(from); at != std::string::npos; at = model.find(from, at + to.size())) {
        model.replace(at, from.size(), to);
        ++replaced;
    }
    return replaced ? model : std::string();
}

} // namespace

class TestTokenizer : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();

    void vocabularySize();
    void specialPieces_data();
    void specialPieces();
    void pieceOutsideVocabularyIsAnError_data();
    void pieceOutsideVocabularyIsAnError();

    void roundTrip_data();
    void roundTrip();
    void rareCharactersRoundTrip_data();
    void rareCharactersRoundTrip();
    void foreignCharacterFallsBackToBytes();
    void emptyText();
    void compression();
    void concurrentEncoding();

    void missingModelIsAnError();
    void corruptModelIsAnError_data();
    void corruptModelIsAnError();
    void modelWithoutOurSpecialTokensIsRefused_data();
    void modelWithoutOurSpecialTokensIsRefused();

    void trainSmallTokenizer();
    void trainingErrors();

private:
    std::unique_ptr<Tokenizer> m_tokenizer;
};

void TestTokenizer::initTestCase()
{
    QVERIFY2(fs::exists(bundledModel()), bundledModel().c_str());
    m_tokenizer = std::make_unique<Tokenizer>(bundledModel());
}

void TestTokenizer::vocabularySize() { QCOMPARE(m_tokenizer->vocabSize(), 8000); }

void TestTokenizer::specialPieces_data()
{
    QTest::addColumn<int>("id");
    QTest::addColumn<int>("constant");
    QTest::addColumn<QString>("piece");
    QTest::newRow("pad") << 0 << int(SpecialTokens::Pad) << QStringLiteral("[PAD]");
    QTest::newRow("unk") << 1 << int(SpecialTokens::Unk) << QStringLiteral("[UNK]");
    QTest::newRow("cls") << 2 << int(SpecialTokens::Cls) << QStringLiteral("[CLS]");
    QTest::newRow("sep") << 3 << int(SpecialTokens::Sep) << QStringLiteral("[SEP]");
    QTest::newRow("mask") << 4 << int(SpecialTokens::Mask) << QStringLiteral("[MASK]");
}

void TestTokenizer::specialPieces()
{
    QFETCH(int, id);
    QFETCH(int, constant);
    QFETCH(QString, piece);
    QCOMPARE(constant, id);
    QCOMPARE(QString::fromStdString(m_tokenizer->piece(id)), piece);
    // [PAD], [CLS] and [SEP] are control symbols: text that spells them is not the special token.
    // ([UNK] spelled out is Latin letters, which this vocabulary lacks; [MASK] is a user-defined
    // symbol, so the text "[MASK]" does become id 4: both are left out here.)
    if (id == SpecialTokens::Pad || id == SpecialTokens::Cls || id == SpecialTokens::Sep) {
        const auto ids = m_tokenizer->encode(piece.toStdString());
        QVERIFY(!ids.empty());
        QVERIFY(std::find(ids.begin(), ids.end(), id) == ids.end());
    }
}

void TestTokenizer::pieceOutsideVocabularyIsAnError_data()
{
    QTest::addColumn<int>("id");
    QTest::newRow("-1") << -1;
    QTest::newRow("vocab size") << 8000;
    QTest::newRow("large") << 1000000;
}

void TestTokenizer::pieceOutsideVocabularyIsAnError()
{
    QFETCH(int, id);
    const QString message = errorOf([&] { (void)m_tokenizer->piece(id); });
    QVERIFY2(message.contains(QString::number(id)) && message.contains(QLatin1String("outside")), qPrintable(message));
    // The last id is inside.
    QVERIFY(!m_tokenizer->piece(7999).empty());
}

void TestTokenizer::roundTrip_data()
{
    QTest::addColumn<QByteArray>("text");
    // Lines of the bundled corpus (rabindranath's "Ghater Katha"), with য়/ড়, dashes, quotes, । and ?.
    for (int line : {0, 1, 3, 7, 25, 49, 56})
        QTest::newRow(qPrintable(QStringLiteral("corpus line %1").arg(line + 1))) << bytes(corpusLine(line));
    QTest::newRow("national anthem") << QByteArray("আমার সোনার বাংলা, আমি তোমায় ভালোবাসি।");
    QTest::newRow("question and exclamation") << QByteArray("তুমি কোথায় যাচ্ছ? এখনই ফিরে এসো!");
    QTest::newRow("quotes and semicolon") << QByteArray("সে বলিল, \"আজ বৃষ্টি হইবে\"; কেহ বিশ্বাস করিল না।");
    QTest::newRow("curly quotes and dash") << QByteArray("‘কে?’ — “আমি।” (তাহার পরে আর কথা নাই)");
    QTest::newRow("digits one and two") << QByteArray("১২ জন লোক, ২১ দিন, ১১২ পৃষ্ঠা।");
    QTest::newRow("verse marks") << QByteArray("ভণই কাহ্ন জিণরঅণ বি কইসা।॥ ধ্রু॥");
    QTest::newRow("single word") << QByteArray("বাংলা");
}

void TestTokenizer::roundTrip()
{
    QFETCH(QByteArray, text);
    const std::string original = str(text);
    QVERIFY(!original.empty());
    const auto ids = m_tokenizer->encode(original);
    QVERIFY(!ids.empty());
    for (int id : ids) {
        QVERIFY2(id >= SpecialTokens::Count, qPrintable(QStringLiteral("special id %1 in plain text").arg(id)));
        QVERIFY(id < m_tokenizer->vocabSize());
    }
    const std::string decoded = m_tokenizer->decode(ids);
    QVERIFY2(decoded == original, qPrintable(QStringLiteral("decoded: %1").arg(QString::fromStdString(decoded))));
    // Encoding is deterministic.
    QVERIFY(m_tokenizer->encode(original) == ids);
}

void TestTokenizer::rareCharactersRoundTrip_data()
{
    // Text that a tokenizer without byte fallback (or with nmt_nfkc normalisation) loses; the
    // bundled one must reproduce it exactly.
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("reason");
    QTest::newRow("bengali digits 0-9")
        << QByteArray("সন ১৯০৫, ৩৪৫৬৭৮ টাকা, ০ বাকি।")
        << QStringLiteral("Bengali digits are rare in this corpus: byte fallback must cover them");
    QTest::newRow("ascii digits and latin")
        << QByteArray("Rabindranath Tagore 1861")
        << QStringLiteral("Latin letters and ASCII digits are covered by byte fallback");
    QTest::newRow("colon") << QByteArray("তিনি বলিলেন: না।")
                           << QStringLiteral("':' is covered by byte fallback");
    QTest::newRow("zero-width non-joiner")
        << QByteArray("র\u200c\u200dযাব, ক্\u200cষ")
        << QStringLiteral("NFKC (not nmt_nfkc) keeps ZWNJ/ZWJ");
}

void TestTokenizer::rareCharactersRoundTrip()
{
    QFETCH(QByteArray, text);
    QFETCH(QString, reason);
    Q_UNUSED(reason);
    const std::string original = str(text);
    const std::string decoded = m_tokenizer->decode(m_tokenizer->encode(original));
    QVERIFY2(decoded == original, qPrintable(QStringLiteral("decoded: %1").arg(QString::fromStdString(decoded))));
}

void TestTokenizer::foreignCharacterFallsBackToBytes()
{
    // A character of another script has no piece of its own: byte fallback spells it as its three
    // UTF-8 bytes (pieces <0xE6> <0xBC> <0xA2>), so nothing becomes [UNK] and nothing is dropped.
    const auto ids = m_tokenizer->encode("বাংলা 漢 বাংলা");
    QVERIFY(std::count(ids.begin(), ids.end(), SpecialTokens::Unk) == 0);
    QCOMPARE(m_tokenizer->decode(ids), std::string("বাংলা 漢 বাংলা"));
    int bytePieces = 0;
    for (int id : ids)
        bytePieces += m_tokenizer->piece(id).starts_with("<0x") ? 1 : 0;
    QCOMPARE(bytePieces, 3);
    const auto plain = m_tokenizer->encode("বাংলা বাংলা");
    QVERIFY(std::count(plain.begin(), plain.end(), SpecialTokens::Unk) == 0);
}

void TestTokenizer::emptyText()
{
    QVERIFY(m_tokenizer->encode("").empty());
    QCOMPARE(m_tokenizer->decode({}), std::string());
}

void TestTokenizer::compression()
{
    // One long corpus line: far fewer tokens than characters (the unigram model learned words and
    // subwords, not single characters); measured about 0.22 tokens per character.
    const std::string line = corpusLine(7);
    const auto ids = m_tokenizer->encode(line);
    const std::size_t chars = codePoints(line);
    qInfo("%zu bytes, %zu characters, %zu tokens", line.size(), chars, ids.size());
    QVERIFY(chars > 500);
    QVERIFY2(ids.size() * 3 < chars, qPrintable(QStringLiteral("%1 tokens for %2 characters").arg(ids.size()).arg(chars)));
    QVERIFY(ids.size() * 20 > chars); // and not absurdly few

    // Over ~100 KB of the corpus.
    const std::string all = dedloc::readWholeFile(bundledCorpus()).substr(0, 100000);
    std::size_t tokens = 0;
    std::size_t start = 0;
    while (start < all.size()) {
        std::size_t end = all.find('\n', start);
        if (end == std::string::npos)
            break;
        tokens += m_tokenizer->encode(std::string_view(all).substr(start, end - start)).size();
        start = end + 1;
    }
    QVERIFY2(tokens * 3 < codePoints(all), qPrintable(QStringLiteral("%1 tokens").arg(tokens)));
}

void TestTokenizer::concurrentEncoding()
{
    // encode/decode are documented as safe from several threads.
    std::vector<std::string> lines;
    for (int i = 1; i < 40; ++i)
        lines.push_back(corpusLine(i));
    std::vector<std::vector<int>> expected;
    for (const auto &l : lines)
        expected.push_back(m_tokenizer->encode(l));
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int round = 0; round < 10; ++round)
                for (std::size_t i = 0; i < lines.size(); ++i) {
                    const auto ids = m_tokenizer->encode(lines[i]);
                    if (ids != expected[i] || m_tokenizer->decode(ids) != m_tokenizer->decode(expected[i]))
                        ++mismatches[static_cast<std::size_t>(t)];
                }
        });
    for (auto &th : threads)
        th.join();
    QCOMPARE(mismatches, std::vector<int>(4, 0));
}

void TestTokenizer::missingModelIsAnError()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path file = fs::path(dir.path().toStdString()) / "nothing-here.model";
    const QString message = errorOf([&] { Tokenizer t(file); });
    QVERIFY2(message.contains(QString::fromStdString(file.string())) && message.contains(QLatin1String("does not exist")),
             qPrintable(message));
}

void TestTokenizer::corruptModelIsAnError_data()
{
    QTest::addColumn<QByteArray>("content");
    std::mt19937_64 rng(42);
    std::string random(20000, '\0');
    for (auto &c : random)
        c = static_cast<char>(rng() & 0xFF);
    QTest::newRow("random bytes") << bytes(random);
    QTest::newRow("empty file") << QByteArray();
    QTest::newRow("text") << QByteArray("this is not a sentencepiece model\n");
    const std::string real = dedloc::readWholeFile(bundledModel());
    // Cut inside the "[MASK]" piece string, so that a length-delimited field runs past the end.
    // (A cut that happens to fall between two fields parses as a smaller model: protobuf cannot
    // tell; the manifest's SHA-256 and the trainer's vocab_size check catch that case.)
    const auto mask = real.find("[MASK]");
    QVERIFY(mask != std::string::npos);
    QTest::newRow("truncated model") << bytes(real.substr(0, mask + 3));
}

void TestTokenizer::corruptModelIsAnError()
{
    QFETCH(QByteArray, content);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path file = fs::path(dir.path().toStdString()) / "broken.model";
    dedloc::writeFileAtomically(file, str(content));
    const QString message = errorOf([&] { Tokenizer t(file); });
    QVERIFY2(message.contains(QString::fromStdString(file.string())), qPrintable(message));
    QVERIFY2(!message.startsWith(QLatin1String("NOT A")) && message != QLatin1String("<no exception>"),
             qPrintable(message));
}

void TestTokenizer::modelWithoutOurSpecialTokensIsRefused_data()
{
    QTest::addColumn<QString>("piece");
    QTest::addColumn<QString>("renamed");
    QTest::addColumn<int>("id");
    QTest::newRow("no [PAD]") << QStringLiteral("[PAD]") << QStringLiteral("[PAX]") << 0;
    QTest::newRow("no [UNK]") << QStringLiteral("[UNK]") << QStringLiteral("[UNQ]") << 1;
    QTest::newRow("no [CLS]") << QStringLiteral("[CLS]") << QStringLiteral("<cls>") << 2;
    QTest::newRow("no [SEP]") << QStringLiteral("[SEP]") << QStringLiteral("</s>_") << 3;
    QTest::newRow("no [MASK]") << QStringLiteral("[MASK]") << QStringLiteral("[MOSK]") << 4;
}

void TestTokenizer::modelWithoutOurSpecialTokensIsRefused()
{
    QFETCH(QString, piece);
    QFETCH(QString, renamed);
    QFETCH(int, id);
    const std::string model = modelWithRenamedPiece(piece.toStdString(), renamed.toStdString());
    QVERIFY2(!model.empty(), "the piece does not occur in the bundled model");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path file = fs::path(dir.path().toStdString()) / "foreign.model";
    dedloc::writeFileAtomically(file, model);
    const QString message = errorOf([&] { Tokenizer t(file); });
    QVERIFY2(message.contains(QString::fromStdString(file.string())), qPrintable(message));
    QVERIFY2(message.contains(piece) && message.contains(QStringLiteral("id %1").arg(id)), qPrintable(message));
}

void TestTokenizer::trainSmallTokenizer()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path root = dir.path().toStdString();
    const fs::path corpus = root / "sample.txt";
    dedloc::test::writeCorpusSample(corpus, 200 * 1024);
    QVERIFY(fs::file_size(corpus) > 150 * 1024);

    dedloc::TokenizerTrainingOptions options;
    options.vocabSize = 500;
    dedloc::trainTokenizer({corpus}, root / "small", options);
    QVERIFY(fs::exists(root / "small.model"));
    QVERIFY(fs::exists(root / "small.vocab"));

    const Tokenizer small(root / "small.model");
    QCOMPARE(small.vocabSize(), 500);
    QCOMPARE(small.piece(SpecialTokens::Pad), std::string("[PAD]"));
    QCOMPARE(small.piece(SpecialTokens::Unk), std::string("[UNK]"));
    QCOMPARE(small.piece(SpecialTokens::Cls), std::string("[CLS]"));
    QCOMPARE(small.piece(SpecialTokens::Sep), std::string("[SEP]"));
    QCOMPARE(small.piece(SpecialTokens::Mask), std::string("[MASK]"));

    // Lines of the training sample round-trip, and the small vocabulary needs more tokens for them
    // than the bundled 8000-piece one.
    std::size_t smallTokens = 0, bigTokens = 0;
    for (int line : {1, 3, 7, 25, 49}) {
        const std::string text = corpusLine(line);
        const auto ids = small.encode(text);
        for (int id : ids)
            QVERIFY(id >= SpecialTokens::Count && id < 500);
        QVERIFY2(small.decode(ids) == text, qPrintable(QStringLiteral("line %1").arg(line + 1)));
        smallTokens += ids.size();
        bigTokens += m_tokenizer->encode(text).size();
    }
    qInfo("vocab 500: %zu tokens, vocab 8000: %zu tokens", smallTokens, bigTokens);
    QVERIFY(smallTokens > bigTokens * 5 / 4);
}

void TestTokenizer::trainingErrors()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path root = dir.path().toStdString();
    dedloc::TokenizerTrainingOptions options;
    options.vocabSize = 500;

    QString message = errorOf([&] { dedloc::trainTokenizer({}, root / "none", options); });
    QVERIFY2(message.contains(QLatin1String("no corpus")), qPrintable(message));

    const fs::path missing = root / "missing.txt";
    message = errorOf([&] { dedloc::trainTokenizer({missing}, root / "none", options); });
    QVERIFY2(message.contains(QString::fromStdString(missing.string())), qPrintable(message));

    // A 2 KB corpus cannot fill 8000 pieces.
    const fs::path tiny = root / "tiny.txt";
    dedloc::test::writeCorpusSample(tiny, 2000);
    options.vocabSize = 8000;
    message = errorOf([&] { dedloc::trainTokenizer({tiny}, root / "tiny", options); });
    QVERIFY2(message.startsWith(QLatin1String("tokenizer training failed")), qPrintable(message));
    QVERIFY(!fs::exists(root / "tiny.model"));
}

QTEST_APPLESS_MAIN(TestTokenizer)
#include "tst_tokenizer.moc"
