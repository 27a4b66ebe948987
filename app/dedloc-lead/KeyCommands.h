#pragma once
// dedloc-lead's key, signature and token commands: argument parsing only; the work is in
// core/security. Each returns the process exit code (0 ok, 1 verification failed, 2 bad input);
// dedloc::Error escapes to main(), which prints it and exits 2.
#include <QStringList>

namespace dedloc::lead {

int keygen(const QStringList &args);
int sign(const QStringList &args);
int verify(const QStringList &args);
int rotateKey(const QStringList &args);
int issueToken(const QStringList &args);

} // namespace dedloc::lead
