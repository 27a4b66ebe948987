// shim_probe MODULE MODEL: loads a SentencePiece shim module (core/model/SentencePieceShim.h)
// with dlopen, the way the app does, loads MODEL through it and encodes a word. Exit status 0
// when the model loads and gives a vocabulary; used by shim-variants.sh to tell which way of
// building the shim works on a host.
#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

using Load = int (*)(const char *, void **, char *, std::size_t);
using VocabSize = int (*)(const void *);
using Encode = int (*)(const void *, const char *, std::size_t, int **, std::size_t *, char *, std::size_t);
using FreeBuffer = void (*)(void *);

int main(int argc, char **argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: shim_probe MODULE MODEL\n");
        return 2;
    }
    void *module = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!module) {
        std::printf("dlopen failed: %s\n", dlerror());
        return 1;
    }
    auto load = reinterpret_cast<Load>(dlsym(module, "dedloc_spm_load"));
    auto vocabSize = reinterpret_cast<VocabSize>(dlsym(module, "dedloc_spm_vocab_size"));
    auto encode = reinterpret_cast<Encode>(dlsym(module, "dedloc_spm_encode"));
    auto freeBuffer = reinterpret_cast<FreeBuffer>(dlsym(module, "dedloc_spm_free_buffer"));
    if (!load || !vocabSize || !encode || !freeBuffer) {
        std::printf("the module lacks the shim's functions\n");
        return 1;
    }
    void *processor = nullptr;
    char error[256] = {0};
    if (load(argv[2], &processor, error, sizeof error) != 0) {
        std::printf("load failed: %s\n", error);
        return 1;
    }
    int *ids = nullptr;
    std::size_t count = 0;
    const char text[] = "abc";
    if (encode(processor, text, sizeof text - 1, &ids, &count, error, sizeof error) != 0) {
        std::printf("encode failed: %s\n", error);
        return 1;
    }
    std::printf("vocabulary %d, \"abc\" -> %zu ids\n", vocabSize(processor), count);
    freeBuffer(ids);
    return vocabSize(processor) > 0 ? 0 : 1;
}
