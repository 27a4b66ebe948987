#include "model/DataPipeline.h"

#include "model/Tokenizer.h"
#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Log.h"

#include <random>
#include <sstream>
#include <string_view>

namespace dedloc {

std::uint64_t splitMix64(std::uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

namespace {

void tokenizeInto(const Tokenizer &tokenizer, std::string_view text, std::vector<std::int32_t> &out)
{
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos)
            end = text.size();
        const auto line = text.substr(start, end - start);
        if (!line.empty()) {
            const auto ids = tokenizer.encode(line);
            out.insert(out.end(), ids.begin(), ids.end());
        }
        start = end + 1;
    }
}

} // namespace

DataPipeline::DataPipeline(const Tokenizer &tokenizer, const std::vector<std::filesystem::path> &corpusFiles,
                           double validationFraction, int sequenceLength, std::uint64_t seed)
    : m_sequenceLength(sequenceLength), m_seed(seed)
{
    if (sequenceLength < 3)
        throw Error("sequence length must be at least 3 tokens, got " + std::to_string(sequenceLength));
    if (corpusFiles.empty())
        throw Error("the run names no corpus files");
    std::string text;
    for (const auto &file : corpusFiles) {
        if (!std::filesystem::exists(file))
            throw Error("corpus file " + file.string() + " does not exist");
        text += readWholeFile(file);
        if (!text.empty() && text.back() != '\n')
            text.push_back('\n');
    }
    // Hold out the tail, cut at the next line boundary so no line is split between the two.
    std::size_t cut = text.size() - static_cast<std::size_t>(static_cast<double>(text.size()) * validationFraction);
    if (validationFraction > 0.0) {
        const auto nl = text.find('\n', cut == 0 ? 0 : cut - 1);
        cut = nl == std::string::npos ? text.size() : nl + 1;
    } else {
        cut = text.size();
    }
    const std::string_view all(text);
    tokenizeInto(tokenizer, all.substr(0, cut), m_trainTokens);
    tokenizeInto(tokenizer, all.substr(cut), m_validationTokens);

    const auto body = static_cast<std::size_t>(sequenceLength - 2);
    m_trainSequences = m_trainTokens.size() / body;
    m_validationSequences = m_validationTokens.size() / body;
    if (m_trainSequences == 0)
        throw Error("the corpus is too small: not one training sequence of " + std::to_string(sequenceLength)
                    + " tokens (got " + std::to_string(m_trainTokens.size()) + " tokens)");
    if (validationFraction > 0.0 && m_validationSequences == 0)
        throw Error("the validation split is too small for one sequence of " + std::to_string(sequenceLength)
                    + " tokens; raise corpus.validation_fraction");
    std::ostringstream msg;
    msg << "corpus: " << text.size() << " bytes, " << m_trainTokens.size() << " training tokens ("
        << m_trainSequences << " sequences of " << sequenceLength << "), " << m_validationTokens.size()
        << " validation tokens (" << m_validationSequences << " sequences)";
    log::info("data", msg.str());
}

void DataPipeline::preparePass()
{
    if (m_permutationPass == m_position.pass)
        return;
    m_permutation.resize(m_trainSequences);
    for (std::size_t i = 0; i < m_trainSequences; ++i)
        m_permutation[i] = static_cast<std::uint32_t>(i);
    // Fisher-Yates with our own index draw: std::shuffle's distribution is implementation-defined,
    // and a resumed run (or another build) must produce the same order.
    std::mt19937_64 rng(splitMix64(m_seed ^ splitMix64(m_position.pass)));
    for (std::size_t i = m_trainSequences; i > 1; --i) {
        const std::size_t j = rng() % i;
        std::swap(m_permutation[i - 1], m_permutation[j]);
    }
    m_permutationPass = m_position.pass;
}

void DataPipeline::appendSequence(const std::vector<std::int32_t> &stream, std::size_t sequence,
                                  std::vector<std::int32_t> &out) const
{
    const auto body = static_cast<std::size_t>(m_sequenceLength - 2);
    out.push_back(SpecialTokens::Cls);
    const auto begin = stream.begin() + static_cast<std::ptrdiff_t>(sequence * body);
    out.insert(out.end(), begin, begin + static_cast<std::ptrdiff_t>(body));
    out.push_back(SpecialTokens::Sep);
}

std::vector<std::int32_t> DataPipeline::nextTrainBatch(int count)
{
    std::vector<std::int32_t> out;
    out.reserve(static_cast<std::size_t>(count) * static_cast<std::size_t>(m_sequenceLength));
    for (int i = 0; i < count; ++i) {
        if (m_position.index >= m_trainSequences) {
            ++m_position.pass;
            m_position.index = 0;
            log::info("data", "starting data pass " + std::to_string(m_position.pass));
        }
        preparePass();
        appendSequence(m_trainTokens, m_permutation[m_position.index], out);
        ++m_position.index;
    }
    return out;
}

std::vector<std::int32_t> DataPipeline::validationBatch(int count) const
{
    std::vector<std::int32_t> out;
    const auto n = std::min<std::size_t>(static_cast<std::size_t>(count), m_validationSequences);
    out.reserve(n * static_cast<std::size_t>(m_sequenceLength));
    for (std::size_t s = 0; s < n; ++s)
        appendSequence(m_validationTokens, s, out);
    return out;
}

void DataPipeline::setPosition(DataPosition position)
{
    if (position.index > m_trainSequences)
        throw Error("data position " + std::to_string(position.index) + " is past the corpus's "
                    + std::to_string(m_trainSequences) + " sequences (was the corpus changed?)");
    m_position = position;
}

void DataPipeline::reseed(std::uint64_t seed)
{
    m_seed = seed;
    m_position = {};
    m_permutationPass = ~0ULL;
}

} // namespace dedloc
