#pragma once
// C ABI of the SentencePiece shim module (libdedloc_sentencepiece.so).
//
// Why a shim: Debian's libsentencepiece.so.0 carries its own copy of protobuf-lite and exports
// those symbols, and libtorch loads the system libprotobuf.so.32. Linked into one process, the
// two copies interpose each other and the process crashes during static initialisation. The
// shim links libsentencepiece and is loaded with dlopen(RTLD_LOCAL | RTLD_DEEPBIND): its
// protobuf stays private to it and libtorch's stays global. See docs/DECISIONS.md.
//
// Every function returns 0 on success; on failure it writes a message into `error`
// (NUL-terminated, at most errorBytes) and returns non-zero. Buffers handed out (*ids, *text)
// are malloc'ed; free them with dedloc_spm_free_buffer.
#include <cstddef>

extern "C" {

int dedloc_spm_load(const char *modelFile, void **processor, char *error, std::size_t errorBytes);
void dedloc_spm_destroy(void *processor);
int dedloc_spm_vocab_size(const void *processor);
int dedloc_spm_encode(const void *processor, const char *text, std::size_t bytes, int **ids, std::size_t *count,
                      char *error, std::size_t errorBytes);
int dedloc_spm_decode(const void *processor, const int *ids, std::size_t count, char **text, std::size_t *bytes,
                      char *error, std::size_t errorBytes);
int dedloc_spm_piece(const void *processor, int id, char **text, std::size_t *bytes);
int dedloc_spm_train(const char *arguments, char *error, std::size_t errorBytes);
void dedloc_spm_free_buffer(void *buffer);
}
