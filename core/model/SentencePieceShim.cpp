// The shim module itself: thin C wrappers over libsentencepiece (see SentencePieceShim.h).
#include "model/SentencePieceShim.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Processor = sentencepiece::SentencePieceProcessor;

void setError(char *error, std::size_t bytes, const std::string &message)
{
    if (!error || bytes == 0)
        return;
    const std::size_t n = std::min(bytes - 1, message.size());
    std::memcpy(error, message.data(), n);
    error[n] = '\0';
}

template <typename T> T *copyOut(const T *data, std::size_t count)
{
    auto *out = static_cast<T *>(std::malloc(std::max<std::size_t>(1, count * sizeof(T))));
    if (out && count)
        std::memcpy(out, data, count * sizeof(T));
    return out;
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) int dedloc_spm_load(const char *modelFile, void **processor, char *error,
                                                           std::size_t errorBytes)
{
    auto p = std::make_unique<Processor>();
    const auto status = p->Load(modelFile);
    if (!status.ok()) {
        setError(error, errorBytes, status.ToString());
        return 1;
    }
    *processor = p.release();
    return 0;
}

__attribute__((visibility("default"))) void dedloc_spm_destroy(void *processor)
{
    delete static_cast<Processor *>(processor);
}

__attribute__((visibility("default"))) int dedloc_spm_vocab_size(const void *processor)
{
    return static_cast<const Processor *>(processor)->GetPieceSize();
}

__attribute__((visibility("default"))) int dedloc_spm_encode(const void *processor, const char *text, std::size_t bytes,
                                                             int **ids, std::size_t *count, char *error,
                                                             std::size_t errorBytes)
{
    std::vector<int> out;
    const auto status = static_cast<const Processor *>(processor)->Encode(std::string_view(text, bytes), &out);
    if (!status.ok()) {
        setError(error, errorBytes, status.ToString());
        return 1;
    }
    *ids = copyOut(out.data(), out.size());
    *count = out.size();
    return *ids ? 0 : 1;
}

__attribute__((visibility("default"))) int dedloc_spm_decode(const void *processor, const int *ids, std::size_t count,
                                                             char **text, std::size_t *bytes, char *error,
                                                             std::size_t errorBytes)
{
    std::string out;
    const auto status = static_cast<const Processor *>(processor)->Decode(std::vector<int>(ids, ids + count), &out);
    if (!status.ok()) {
        setError(error, errorBytes, status.ToString());
        return 1;
    }
    *text = copyOut(out.data(), out.size());
    *bytes = out.size();
    return *text ? 0 : 1;
}

__attribute__((visibility("default"))) int dedloc_spm_piece(const void *processor, int id, char **text,
                                                            std::size_t *bytes)
{
    const auto *p = static_cast<const Processor *>(processor);
    if (id < 0 || id >= p->GetPieceSize())
        return 1;
    const std::string piece = p->IdToPiece(id);
    *text = copyOut(piece.data(), piece.size());
    *bytes = piece.size();
    return *text ? 0 : 1;
}

__attribute__((visibility("default"))) int dedloc_spm_train(const char *arguments, char *error, std::size_t errorBytes)
{
    const auto status = sentencepiece::SentencePieceTrainer::Train(arguments);
    if (!status.ok()) {
        setError(error, errorBytes, status.ToString());
        return 1;
    }
    return 0;
}

__attribute__((visibility("default"))) void dedloc_spm_free_buffer(void *buffer) { std::free(buffer); }
}
