#pragma once
// Dynamic masking for masked-LM pretraining (BERT, Devlin et al. 2019, section 3.1; ALBERT keeps
// it): every time a sequence is used, each non-special token is selected with probability p
// (0.15); a selected token becomes [MASK] with probability 0.8, a random non-special token with
// 0.1, and stays itself with 0.1. The loss is computed at selected positions only: labels hold
// the original id there and IgnoreLabel elsewhere. Each sequence gets at least one selected
// position, so a micro-batch never has an empty loss.
// Torch-free; deterministic given the generator state (saved in checkpoints).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace dedloc {

struct MaskedBatch {
    std::vector<std::int32_t> inputIds; // [batch * sequenceLength], row-major
    std::vector<std::int64_t> labels;   // same shape; IgnoreLabel where no loss is taken
    std::int64_t maskedCount = 0;       // positions with a label
};

class DynamicMasker final {
public:
    static constexpr std::int64_t IgnoreLabel = -100; // torch's cross_entropy ignore_index default

    DynamicMasker(int vocabSize, double maskProbability, std::uint64_t seed);

    [[nodiscard]] MaskedBatch mask(const std::vector<std::int32_t> &tokens, int sequenceLength);

    // Generator state as text (std::mt19937_64's stream format), for checkpoints.
    [[nodiscard]] std::string state() const;
    void setState(const std::string &state); // throws dedloc::Error if malformed

private:
    [[nodiscard]] double uniform();

    int m_vocabSize;
    double m_probability;
    std::mt19937_64 m_rng;
};

} // namespace dedloc
