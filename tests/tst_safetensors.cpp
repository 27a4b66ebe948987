// The safetensors writer (eval/SafeTensors.h) against the test reader written from the format's
// specification (tests/support/SafeTensorsReader.h): values bit for bit, shapes, order, metadata
// and the 8-byte alignment of the data; tensors the writer must refuse; and files the reader
// must refuse, so that its acceptance of the writer's files means something.
#include "eval/SafeTensors.h"
#include "util/AtomicFile.h"
#include "util/Error.h"

#include "SafeTensorsReader.h"
#include "TestSupport.h"

#include <QTemporaryDir>
#include <QtTest>

#include <bit>
#include <cmath>
#include <limits>

using namespace dedloc;
using dedloc::test::errorOf;
using dedloc::test::readSafeTensors;

namespace {

std::filesystem::path in(const QTemporaryDir &dir, const char *name)
{
    return std::filesystem::path(dir.path().toStdString()) / name;
}

std::vector<std::uint32_t> bits(const std::vector<float> &values)
{
    std::vector<std::uint32_t> out;
    for (const float v : values)
        out.push_back(std::bit_cast<std::uint32_t>(v));
    return out;
}

// A file of the given header text and buffer, the header size as declared (the true one by default).
void writeRaw(const std::filesystem::path &file, const std::string &header, std::size_t bufferBytes,
              std::optional<std::uint64_t> declared = std::nullopt)
{
    std::string bytes;
    const std::uint64_t n = declared.value_or(header.size());
    for (int i = 0; i < 8; ++i)
        bytes.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
    bytes += header;
    bytes.append(bufferBytes, '\0');
    writeFileAtomically(file, bytes);
}

} // namespace

class TestSafeTensors final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void roundTripKeepsValuesShapesOrderAndMetadata()
    {
        QTemporaryDir dir;
        const auto file = in(dir, "m.safetensors");
        const std::vector<float> matrix = {
            1.5F, -2.25F, 0.0F, -0.0F, 3.0e-39F /* subnormal */, 1e30F, std::numeric_limits<float>::infinity(), -7.0F,
            0.1F, 0.2F,   0.3F, 42.0F};
        const std::vector<float> vector = {-1.0F, 2.0F, -3.0F, 4.0F, std::nanf("")};
        const std::vector<float> scalar = {6.5F};
        const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "বাংলা \"quoted\""}};
        writeSafeTensors(
            file,
            {{"z.matrix", {3, 4}, matrix}, {"a.vector", {5}, vector}, {"scalar", {}, scalar}, {"empty", {0, 3}, {}}},
            metadata);

        const auto back = readSafeTensors(file);
        QCOMPARE(back.metadata, metadata);
        QCOMPARE(back.tensors.size(), std::size_t(4));
        QCOMPARE(back.tensors[0].name, std::string("z.matrix")); // the order given, not sorted
        QCOMPARE(back.tensors[1].name, std::string("a.vector"));
        QCOMPARE(back.tensors[0].shape, (std::vector<std::int64_t>{3, 4}));
        QCOMPARE(back.tensors[2].shape, std::vector<std::int64_t>{});
        QCOMPARE(back.tensors[3].shape, (std::vector<std::int64_t>{0, 3}));
        QCOMPARE(bits(back.tensors[0].values), bits(matrix));
        QCOMPARE(bits(back.tensors[1].values), bits(vector));
        QCOMPARE(bits(back.tensors[2].values), bits(scalar));
        QVERIFY(back.tensors[3].values.empty());
        for (const auto &t : back.tensors)
            QCOMPARE(t.dtype, std::string("F32"));
        // Laid out in header order: the data offsets grow along the header.
        QCOMPARE(back.tensors[0].begin, std::uint64_t(0));
        QCOMPARE(back.tensors[1].begin, std::uint64_t(48));
        QCOMPARE(back.tensors[2].begin, std::uint64_t(68));
        QCOMPARE(std::filesystem::file_size(file), back.dataStart + 72);
    }

    void dataStartsEightByteAlignedAfterSpacePadding_data()
    {
        QTest::addColumn<int>("nameLength");
        for (int n = 1; n <= 9; ++n)
            QTest::addRow("name of %d", n) << n;
    }

    void dataStartsEightByteAlignedAfterSpacePadding()
    {
        QFETCH(int, nameLength);
        QTemporaryDir dir;
        const auto file = in(dir, "m.safetensors");
        const std::vector<float> one = {1.0F};
        writeSafeTensors(file, {{std::string(static_cast<std::size_t>(nameLength), 'n'), {1}, one}},
                         {{"format", "pt"}});
        const auto back = readSafeTensors(file);
        QCOMPARE(back.dataStart % 8, std::uint64_t(0));
        const std::string bytes = readWholeFile(file);
        const std::string header = bytes.substr(8, back.headerBytes);
        const auto close = header.rfind('}');
        QCOMPARE(header.find_first_not_of(' ', close + 1), std::string::npos); // only spaces after the JSON
        QVERIFY(header.size() - close - 1 < 8);
    }

    void writerRefusesTensorsTheFormatCannotHold_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QList<qint64>>("shape");
        QTest::addColumn<int>("values");
        QTest::addColumn<QString>("expected");
        QTest::newRow("too few values") << "w" << QList<qint64>{2, 3} << 5 << "has 5 values, its shape [2, 3] holds 6";
        QTest::newRow("too many values") << "w" << QList<qint64>{2} << 3 << "has 3 values, its shape [2] holds 2";
        QTest::newRow("negative dimension") << "w" << QList<qint64>{-1, 2} << 2 << "invalid shape [-1, 2]";
        QTest::newRow("empty name") << "" << QList<qint64>{1} << 1 << "is empty, reserved or repeated";
        QTest::newRow("reserved name") << "__metadata__" << QList<qint64>{1} << 1 << "is empty, reserved or repeated";
        QTest::newRow("repeated name") << "kept" << QList<qint64>{1} << 1 << "is empty, reserved or repeated";
    }

    void writerRefusesTensorsTheFormatCannotHold()
    {
        QFETCH(QString, name);
        QFETCH(QList<qint64>, shape);
        QFETCH(int, values);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const auto file = in(dir, "m.safetensors");
        const std::vector<float> kept = {9.0F};
        writeSafeTensors(file, {{"kept", {1}, kept}}, {});
        const std::vector<float> data(static_cast<std::size_t>(values), 1.0F);
        const auto message = errorOf([&] {
            writeSafeTensors(file, {{"kept", {1}, kept}, {name.toStdString(), {shape.begin(), shape.end()}, data}}, {});
        });
        QVERIFY2(message.contains(expected), qPrintable(message));
        QVERIFY2(message.contains(QString::fromStdString(file.string())), qPrintable(message));
        const auto back = readSafeTensors(file); // the earlier file is untouched
        QCOMPARE(back.tensors.size(), std::size_t(1));
        QCOMPARE(back.tensors[0].values, kept);
    }

    void readerRefusesMalformedFiles_data()
    {
        QTest::addColumn<QString>("header");
        QTest::addColumn<int>("bufferBytes");
        QTest::addColumn<qint64>("declaredSize"); // -1: the header's true size
        QTest::addColumn<QString>("expected");
        const QString one = R"("dtype":"F32","shape":[1])";
        QTest::newRow("valid (control)") << R"({"a":{)" + one + R"(,"data_offsets":[0,4]}})" << 4 << qint64(-1) << "";
        QTest::newRow("header size past the end") << "{}" << 0 << qint64(1000) << "exceeds the file";
        QTest::newRow("not JSON") << "{nope" << 0 << qint64(-1) << "not a JSON object";
        QTest::newRow("not an object") << "[1]" << 0 << qint64(-1) << "does not start with '{'";
        QTest::newRow("unknown dtype") << R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})" << 4 << qint64(-1)
                                       << "unknown dtype";
        QTest::newRow("negative dimension") << R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})" << 4
                                            << qint64(-1) << "not a non-negative integer";
        QTest::newRow("offsets past the buffer")
            << R"({"a":{)" + one + R"(,"data_offsets":[4,8]}})" << 4 << qint64(-1) << "outside the buffer";
        QTest::newRow("size differs from shape")
            << R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})" << 4 << qint64(-1) << "the shape needs 8";
        QTest::newRow("overlap") << R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{)" + one +
                                        R"(,"data_offsets":[4,8]}})"
                                 << 8 << qint64(-1) << "(overlap)";
        QTest::newRow("gap") << R"({"a":{)" + one + R"(,"data_offsets":[0,4]},"b":{)" + one +
                                    R"(,"data_offsets":[8,12]}})"
                             << 12 << qint64(-1) << "(gap)";
        QTest::newRow("bytes after the last tensor") << R"({"a":{)" + one + R"(,"data_offsets":[0,4]}})" << 8
                                                     << qint64(-1) << "end at byte 4, the buffer has 8 bytes";
        QTest::newRow("metadata not strings") << R"({"__metadata__":{"n":1}})" << 0 << qint64(-1) << "is not a string";
        QTest::newRow("missing offsets") << R"({"a":{"dtype":"F32","shape":[1]}})" << 4 << qint64(-1)
                                         << "needs dtype, shape and data_offsets";
    }

    void readerRefusesMalformedFiles()
    {
        QFETCH(QString, header);
        QFETCH(int, bufferBytes);
        QFETCH(qint64, declaredSize);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const auto file = in(dir, "bad.safetensors");
        writeRaw(file, header.toStdString(), static_cast<std::size_t>(bufferBytes),
                 declaredSize < 0 ? std::nullopt : std::optional<std::uint64_t>(declaredSize));
        const auto message = errorOf([&] { (void)readSafeTensors(file); });
        if (expected.isEmpty()) {
            QCOMPARE(message, QStringLiteral("<no exception>"));
            return;
        }
        QVERIFY2(message.contains(expected), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("is not a valid safetensors file")), qPrintable(message));
    }

    void readerRefusesATruncatedFile()
    {
        QTemporaryDir dir;
        const auto file = in(dir, "short.safetensors");
        writeFileAtomically(file, std::string("\x02\0\0", 3));
        QVERIFY(errorOf([&] { (void)readSafeTensors(file); }).contains(QStringLiteral("shorter than")));
    }
};

QTEST_APPLESS_MAIN(TestSafeTensors)
#include "tst_safetensors.moc"
