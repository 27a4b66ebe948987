#pragma once
// SentencePiece unigram tokenizer (Kudo 2018, arXiv 1804.10959) through libsentencepiece.
// Special ids are fixed by trainTokenizer() so that every run agrees on them:
//   0 [PAD], 1 [UNK], 2 [CLS] (SentencePiece's BOS), 3 [SEP] (EOS), 4 [MASK].
// Thread-safety: encode/decode are const and safe to call from several threads.
// libsentencepiece is reached through a dlopen'ed shim (model/SentencePieceShim.h explains why).
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace dedloc {

struct SpecialTokens {
    static constexpr int Pad = 0;
    static constexpr int Unk = 1;
    static constexpr int Cls = 2;
    static constexpr int Sep = 3;
    static constexpr int Mask = 4;
    static constexpr int Count = 5; // ids below this are never produced by plain text
};

class Tokenizer final {
public:
    // Loads a .model file. Throws dedloc::Error if it is missing, corrupt or lacks the special
    // tokens above at their ids.
    explicit Tokenizer(const std::filesystem::path &modelFile);
    ~Tokenizer();
    Tokenizer(const Tokenizer &) = delete;
    Tokenizer &operator=(const Tokenizer &) = delete;

    [[nodiscard]] int vocabSize() const;
    [[nodiscard]] std::vector<int> encode(std::string_view text) const;
    [[nodiscard]] std::string decode(const std::vector<int> &ids) const;
    [[nodiscard]] std::string piece(int id) const;

private:
    void *m_processor = nullptr; // owned; freed through the shim
};

struct TokenizerTrainingOptions {
    int vocabSize = 8000;
    double characterCoverage = 0.9995; // rarer characters fall back to UTF-8 byte pieces
    int inputSentenceSize = 2000000;   // lines sampled by SentencePiece
    int numThreads = 2;
};

// Trains a unigram model on the given UTF-8 text files and writes "<outputPrefix>.model"
// (and .vocab). Throws dedloc::Error on failure (e.g. vocabulary too large for the corpus).
void trainTokenizer(const std::vector<std::filesystem::path> &corpus,
                    const std::filesystem::path &outputPrefix,
                    const TokenizerTrainingOptions &options);

} // namespace dedloc
