#pragma once
// Fixtures of the run manifest's tests: a valid manifest as JSON text, edits of it, the message
// its parsing fails with, a run whose files match their hashes, and a scoped environment
// variable. Test helpers: call them from the test's thread.
#include "run/RunManifest.h"

#include <QByteArray>
#include <QString>

#include <filesystem>
#include <optional>
#include <string>

namespace dedloc::test {

// SHA-256("abc"), FIPS 180-2 appendix B.1: a known answer, so the verification tests do not only
// compare sha256File with itself.
inline constexpr const char *kAbc = "abc";
inline constexpr const char *kAbcSha256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
inline constexpr const char *kHashA = "0000000000000000000000000000000000000000000000000000000000000001";
inline constexpr const char *kHashB = "00000000000000000000000000000000000000000000000000000000000000b2";

// A valid manifest (tiny preset, two corpus files with the hashes above, blockwise8bit, two
// bootstrap peers). Values differ from the struct defaults wherever possible, so a field the
// parser forgot to read shows up as a wrong value.
extern const char *const kValidManifest;

// Applies one edit to the valid manifest: "remove" the key at `pointer`, or "set" it to `value`
// (JSON text); the empty pointer is the whole document.
[[nodiscard]] std::string edited(const QString &op, const QString &pointer, const QString &value);

// The message of the dedloc::Error that parsing throws; nullopt when it is accepted. Any other
// exception type is a bug (a json::type_error leaking out), reported as a message that no test
// expects.
[[nodiscard]] std::optional<QString> parseError(const std::string &text);

// Writes the files of the valid manifest under `root` (the tokenizer "abc", two corpus samples
// of 4 KiB and 64 KiB) and returns that manifest with `root` as its base directory and the
// corpus hashes of those files, so verifyRunFiles() passes.
[[nodiscard]] RunManifest writeVerifiableRun(const std::filesystem::path &root);

// Flips one bit in the middle of `file` (replaced atomically).
void flipOneByte(const std::filesystem::path &file);

// Sets or unsets an environment variable for one scope and restores the previous state.
class EnvGuard final {
  public:
    EnvGuard(const char *name, const std::optional<QByteArray> &value);
    ~EnvGuard();
    EnvGuard(const EnvGuard &) = delete;
    EnvGuard &operator=(const EnvGuard &) = delete;

  private:
    const char *m_name;
    bool m_hadValue;
    QByteArray m_old;
};

} // namespace dedloc::test
