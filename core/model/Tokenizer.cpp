#include "model/Tokenizer.h"

#include "model/SentencePieceShim.h"
#include "util/Error.h"

#include <dlfcn.h>

#include <mutex>
#include <sstream>

namespace dedloc {

namespace {

// The shim's functions, resolved once per process.
struct ShimApi {
    decltype(&dedloc_spm_load) load = nullptr;
    decltype(&dedloc_spm_destroy) destroy = nullptr;
    decltype(&dedloc_spm_vocab_size) vocabSize = nullptr;
    decltype(&dedloc_spm_encode) encode = nullptr;
    decltype(&dedloc_spm_decode) decode = nullptr;
    decltype(&dedloc_spm_piece) piece = nullptr;
    decltype(&dedloc_spm_train) train = nullptr;
    decltype(&dedloc_spm_free_buffer) freeBuffer = nullptr;
};

std::vector<std::filesystem::path> shimCandidates()
{
    constexpr const char *name = "libdedloc_sentencepiece.so";
    std::vector<std::filesystem::path> out;
    if (const char *env = std::getenv("DEDLOC_SPM_SHIM"))
        out.emplace_back(env);
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        out.push_back(exe.parent_path() / name);
        out.push_back(exe.parent_path() / ".." / "lib" / "dedloc" / name);
    }
    out.emplace_back(DEDLOC_SPM_SHIM_BUILD_PATH);
    return out;
}

const ShimApi &shim()
{
    static std::once_flag once;
    static ShimApi api;
    static std::string failure;
    std::call_once(once, [] {
        void *handle = nullptr;
        std::string tried;
        for (const auto &candidate : shimCandidates()) {
            if (!std::filesystem::exists(candidate)) {
                tried.append(" ").append(candidate.string());
                continue;
            }
            // RTLD_LOCAL | RTLD_DEEPBIND: keep libsentencepiece's private protobuf away from
            // libtorch's (SentencePieceShim.h).
            handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
            if (handle)
                break;
            tried.append(" ").append(candidate.string()).append(" (").append(::dlerror()).append(")");
        }
        if (!handle) {
            failure = "cannot load the SentencePiece shim libdedloc_sentencepiece.so; tried:" + tried;
            return;
        }
        auto resolve = [&](auto &fn, const char *symbol) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(handle, symbol));
            if (!fn)
                failure = std::string("the SentencePiece shim lacks ") + symbol;
        };
        resolve(api.load, "dedloc_spm_load");
        resolve(api.destroy, "dedloc_spm_destroy");
        resolve(api.vocabSize, "dedloc_spm_vocab_size");
        resolve(api.encode, "dedloc_spm_encode");
        resolve(api.decode, "dedloc_spm_decode");
        resolve(api.piece, "dedloc_spm_piece");
        resolve(api.train, "dedloc_spm_train");
        resolve(api.freeBuffer, "dedloc_spm_free_buffer");
    });
    if (!failure.empty())
        throw Error(failure);
    return api;
}

} // namespace

Tokenizer::Tokenizer(const std::filesystem::path &modelFile)
{
    if (!std::filesystem::exists(modelFile))
        throw Error("tokenizer model " + modelFile.string() + " does not exist");
    const auto &api = shim();
    char error[512] = {0};
    if (api.load(modelFile.c_str(), &m_processor, error, sizeof error) != 0)
        throw Error("cannot load tokenizer model " + modelFile.string() + ": " + error);
    const struct {
        int id;
        const char *piece;
    } expected[] = {{SpecialTokens::Pad, "[PAD]"}, {SpecialTokens::Unk, "[UNK]"},
                    {SpecialTokens::Cls, "[CLS]"}, {SpecialTokens::Sep, "[SEP]"},
                    {SpecialTokens::Mask, "[MASK]"}};
    for (const auto &e : expected) {
        if (e.id >= vocabSize() || piece(e.id) != e.piece) {
            api.destroy(m_processor);
            m_processor = nullptr;
            throw Error("tokenizer model " + modelFile.string() + " has no " + e.piece + " at id "
                        + std::to_string(e.id) + " (train it with `dedloc-lead make-run`)");
        }
    }
}

Tokenizer::~Tokenizer()
{
    if (m_processor)
        shim().destroy(m_processor);
}

int Tokenizer::vocabSize() const { return shim().vocabSize(m_processor); }

std::vector<int> Tokenizer::encode(std::string_view text) const
{
    const auto &api = shim();
    int *ids = nullptr;
    std::size_t count = 0;
    char error[512] = {0};
    if (api.encode(m_processor, text.data(), text.size(), &ids, &count, error, sizeof error) != 0)
        throw Error(std::string("tokenizer failed to encode text: ") + error);
    std::vector<int> out(ids, ids + count);
    api.freeBuffer(ids);
    return out;
}

std::string Tokenizer::decode(const std::vector<int> &ids) const
{
    const auto &api = shim();
    char *text = nullptr;
    std::size_t bytes = 0;
    char error[512] = {0};
    if (api.decode(m_processor, ids.data(), ids.size(), &text, &bytes, error, sizeof error) != 0)
        throw Error(std::string("tokenizer failed to decode ids: ") + error);
    std::string out(text, bytes);
    api.freeBuffer(text);
    return out;
}

std::string Tokenizer::piece(int id) const
{
    const auto &api = shim();
    char *text = nullptr;
    std::size_t bytes = 0;
    if (api.piece(m_processor, id, &text, &bytes) != 0)
        throw Error("token id " + std::to_string(id) + " is outside the vocabulary");
    std::string out(text, bytes);
    api.freeBuffer(text);
    return out;
}

void trainTokenizer(const std::vector<std::filesystem::path> &corpus,
                    const std::filesystem::path &outputPrefix, const TokenizerTrainingOptions &options)
{
    if (corpus.empty())
        throw Error("no corpus files given to train the tokenizer on");
    std::ostringstream args;
    args << "--input=";
    for (std::size_t i = 0; i < corpus.size(); ++i) {
        if (!std::filesystem::exists(corpus[i]))
            throw Error("corpus file " + corpus[i].string() + " does not exist");
        args << (i ? "," : "") << corpus[i].string();
    }
    args << " --model_prefix=" << outputPrefix.string() << " --model_type=unigram"
         << " --vocab_size=" << options.vocabSize
         << " --character_coverage=" << options.characterCoverage
         << " --input_sentence_size=" << options.inputSentenceSize << " --shuffle_input_sentence=true"
         << " --num_threads=" << options.numThreads
         << " --pad_id=0 --unk_id=1 --bos_id=2 --eos_id=3"
         << " --pad_piece=[PAD] --unk_piece=[UNK] --bos_piece=[CLS] --eos_piece=[SEP]"
         // [MASK] as a control symbol: typed text "[MASK]" must not become the mask id.
         << " --control_symbols=[MASK] --max_sentence_length=100000"
         // Byte fallback: digits, Latin letters and rare signs become UTF-8 byte pieces instead
         // of [UNK], so every text round-trips; NFKC (not nmt_nfkc) keeps ZWJ/ZWNJ, which
         // Bengali conjuncts need.
         << " --byte_fallback=true --normalization_rule_name=nfkc"
         << " --minloglevel=1";
    char error[1024] = {0};
    if (shim().train(args.str().c_str(), error, sizeof error) != 0)
        throw Error(std::string("tokenizer training failed: ") + error);
}

} // namespace dedloc
