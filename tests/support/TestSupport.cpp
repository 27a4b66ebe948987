#include "TestSupport.h"

#include "run/RunMaker.h"
#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Hash.h"

#include <cmath>
#include <fstream>
#include <limits>

namespace dedloc::test {

std::vector<std::string> readLines(const std::filesystem::path &file)
{
    std::ifstream in(file);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);)
        out.push_back(line);
    return out;
}

std::filesystem::path sourceResources() { return DEDLOC_SOURCE_RESOURCES; }

std::filesystem::path defaultManifest() { return sourceResources() / "default-run" / "manifest.json"; }

void writeCorpusSample(const std::filesystem::path &file, std::size_t bytes)
{
    const std::string all = readWholeFile(sourceResources() / "default-run" / "corpus" / "bn_pd_literature.txt");
    std::size_t end = std::min(bytes, all.size());
    const auto nl = all.rfind('\n', end);
    if (nl != std::string::npos && nl > 0)
        end = nl + 1;
    writeFileAtomically(file, all.substr(0, end));
}

QString errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception &e) {
        return QStringLiteral("NOT A dedloc::Error: ") + QString::fromStdString(e.what());
    }
    return QStringLiteral("<no exception>");
}

RunManifest tinyRun(const std::filesystem::path &dir, std::size_t corpusBytes)
{
    RunManifest m;
    m.runId = "tiny-test";
    m.name = "tiny test run";
    m.lead = "tests";
    m.baseDir = dir;
    const auto corpus = dir / "corpus.txt";
    writeCorpusSample(corpus, corpusBytes);
    m.corpus.files = {{corpus.string(), sha256File(corpus)}};
    m.corpus.validationFraction = 0.05;
    const auto tokenizer = sourceResources() / "default-run" / "tokenizer.model";
    m.tokenizer = {tokenizer.string(), sha256File(tokenizer)};
    m.model = presetShape("tiny", 8000, 64);
    m.training.sequenceLength = 64;
    m.training.targetBatchSize = 32;
    m.training.microBatchSize = 16;
    m.training.validationSamples = 32;
    m.optimizer.learningRate = 0.02;
    m.schedule.warmupSteps = 5;
    m.schedule.totalSteps = 200;
    return m;
}

double relativeDifference(const std::vector<float> &a, const std::vector<float> &b)
{
    double diff = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
        diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
        norm += static_cast<double>(b[i]) * b[i];
    }
    return norm > 0.0 ? std::sqrt(diff / norm) : std::numeric_limits<double>::infinity();
}

} // namespace dedloc::test
