#include "compress/ErrorFeedback.h"

#include "util/Error.h"

#include <cmath>
#include <string>
#include <utility>

namespace dedloc {

bool ErrorFeedback::supports(Compression codec)
{
    return codec == Compression::TopK4Bit;
}

void ErrorFeedback::compress(Compression codec, std::span<float> values)
{
    if (!supports(codec))
        throw Error(std::string("error feedback does not apply to the codec ") + compressionName(codec));
    if (!m_residual.empty() && m_residual.size() != values.size())
        throw Error("error feedback: a vector of " + std::to_string(values.size()) + " elements, the residual has "
                    + std::to_string(m_residual.size()));
    m_residual.resize(values.size(), 0.0F);
    std::vector<float> u(values.begin(), values.end());
    for (std::size_t i = 0; i < u.size(); ++i)
        u[i] += m_residual[i];
    m_sent.resize(u.size());
    decode(codec, encode(codec, u), m_sent); // throws for a non-finite u before anything changes
    for (std::size_t i = 0; i < u.size(); ++i) {
        m_residual[i] = u[i] - m_sent[i];
        values[i] = m_sent[i];
    }
}

void ErrorFeedback::restore(std::vector<float> residual)
{
    for (std::size_t i = 0; i < residual.size(); ++i)
        if (!std::isfinite(residual[i]))
            throw Error("error feedback: a residual with a non-finite value at element " + std::to_string(i));
    m_residual = std::move(residual);
}

} // namespace dedloc
