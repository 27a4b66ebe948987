#pragma once
// The data pipeline of masked-LM pretraining: corpus text -> token ids -> packed sequences ->
// shuffled micro-batches. Torch-free: it hands out row-major int32 token ids; the trainer wraps
// them in tensors without copying.
//
// Packing: the training part of the corpus is tokenized line by line into one token stream and
// cut into sequences of `sequenceLength` tokens: [CLS] + (sequenceLength - 2) text tokens + [SEP]
// (as BERT/ALBERT pretraining packs full-length segments; no padding is ever needed).
// Split: the last `validationFraction` of the corpus bytes (moved forward to a line boundary)
// is held out for validation loss and never trained on.
// Order: every pass over the training sequences uses a fresh permutation drawn from
// (seed, pass), so two peers with different seeds see different orders (the sahajBERT run
// shuffled with a seed from each peer's key) and a resumed run continues the same order.
// Thread-safety: none; one pipeline per trainer.
#include <cstdint>
#include <filesystem>
#include <vector>

namespace dedloc {

class Tokenizer;

struct DataPosition {
    std::uint64_t pass = 0;  // completed passes over the training sequences (a data epoch)
    std::uint64_t index = 0; // next sequence within this pass's permutation
    bool operator==(const DataPosition &) const = default;
};

class DataPipeline final {
public:
    // Reads and tokenizes the corpus. Throws dedloc::Error if a file is missing or unreadable,
    // or if either split has fewer than one sequence.
    DataPipeline(const Tokenizer &tokenizer, const std::vector<std::filesystem::path> &corpusFiles,
                 double validationFraction, int sequenceLength, std::uint64_t seed);

    [[nodiscard]] int sequenceLength() const { return m_sequenceLength; }
    [[nodiscard]] std::size_t trainSequenceCount() const { return m_trainSequences; }
    [[nodiscard]] std::size_t validationSequenceCount() const { return m_validationSequences; }
    [[nodiscard]] std::size_t trainTokenCount() const { return m_trainTokens.size(); }

    // Appends `count` sequences (count * sequenceLength ids, row-major) in shuffled order and
    // advances the position; wraps into the next pass when a pass ends.
    [[nodiscard]] std::vector<std::int32_t> nextTrainBatch(int count);
    // The first `count` validation sequences (fewer if the split is smaller); always the same.
    [[nodiscard]] std::vector<std::int32_t> validationBatch(int count) const;

    [[nodiscard]] DataPosition position() const { return m_position; }
    void setPosition(DataPosition position);
    [[nodiscard]] std::uint64_t seed() const { return m_seed; }
    // Restarts at position {0, 0} with the order of another seed (the corpus stays loaded).
    void reseed(std::uint64_t seed);

private:
    void preparePass();
    void appendSequence(const std::vector<std::int32_t> &stream, std::size_t sequence,
                        std::vector<std::int32_t> &out) const;

    int m_sequenceLength;
    std::uint64_t m_seed;
    std::vector<std::int32_t> m_trainTokens;      // text tokens only, no [CLS]/[SEP]
    std::vector<std::int32_t> m_validationTokens;
    std::size_t m_trainSequences = 0;
    std::size_t m_validationSequences = 0;
    DataPosition m_position;
    std::vector<std::uint32_t> m_permutation;     // of the current pass
    std::uint64_t m_permutationPass = ~0ULL;
};

// SplitMix64 (Steele et al. 2014): a tiny, portable, well-mixed hash for seeds.
[[nodiscard]] std::uint64_t splitMix64(std::uint64_t x);

} // namespace dedloc
