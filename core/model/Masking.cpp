#include "model/Masking.h"

#include "model/Tokenizer.h"
#include "util/Error.h"

#include <sstream>

namespace dedloc {

DynamicMasker::DynamicMasker(int vocabSize, double maskProbability, std::uint64_t seed)
    : m_vocabSize(vocabSize), m_probability(maskProbability), m_rng(seed)
{
    if (vocabSize <= SpecialTokens::Count)
        throw Error("vocabulary of " + std::to_string(vocabSize) + " tokens is too small to mask");
}

double DynamicMasker::uniform()
{
    // 53 random bits -> [0, 1): portable, unlike std::uniform_real_distribution.
    return static_cast<double>(m_rng() >> 11) * 0x1.0p-53;
}

MaskedBatch DynamicMasker::mask(const std::vector<std::int32_t> &tokens, int sequenceLength)
{
    MaskedBatch out;
    out.inputIds = tokens;
    out.labels.assign(tokens.size(), IgnoreLabel);
    const auto length = static_cast<std::size_t>(sequenceLength);
    const auto randomRange = static_cast<std::uint64_t>(m_vocabSize - SpecialTokens::Count);

    auto select = [&](std::size_t i) {
        out.labels[i] = tokens[i];
        ++out.maskedCount;
        const double r = uniform();
        if (r < 0.8)
            out.inputIds[i] = SpecialTokens::Mask;
        else if (r < 0.9)
            out.inputIds[i] = static_cast<std::int32_t>(SpecialTokens::Count + m_rng() % randomRange);
        // else: keep the original token (the model must still predict it)
    };

    for (std::size_t start = 0; start + length <= tokens.size(); start += length) {
        bool any = false;
        std::size_t candidates = 0;
        for (std::size_t i = start; i < start + length; ++i) {
            if (tokens[i] < SpecialTokens::Count)
                continue;
            ++candidates;
            if (uniform() < m_probability) {
                select(i);
                any = true;
            }
        }
        if (!any && candidates > 0) {
            // Pick the k-th candidate uniformly.
            std::size_t k = m_rng() % candidates;
            for (std::size_t i = start; i < start + length; ++i) {
                if (tokens[i] < SpecialTokens::Count)
                    continue;
                if (k-- == 0) {
                    select(i);
                    break;
                }
            }
        }
    }
    return out;
}

std::string DynamicMasker::state() const
{
    std::ostringstream s;
    s << m_rng;
    return s.str();
}

void DynamicMasker::setState(const std::string &state)
{
    std::istringstream s(state);
    std::mt19937_64 rng;
    s >> rng;
    if (s.fail())
        throw Error("masking generator state is malformed");
    m_rng = rng;
}

} // namespace dedloc
