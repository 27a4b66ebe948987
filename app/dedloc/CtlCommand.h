#pragma once
// `dedloc ctl status|pause|resume|quit|raise`: drives the app running on this machine for the
// same data directory, through its control socket (ControlChannel.h), from a terminal or script.
//
//   dedloc ctl status [--json]      the state line (or the whole status as one JSON object)
//   dedloc ctl pause [--for 1h30m]  pause until resumed (or for the duration; s, m, h, d)
//   dedloc ctl resume | quit | raise
//   --data-dir DIR                  the app started with this --data-dir
//
// Exit codes: 0 done; 1 no app answers, or it refused (the reason on stderr); 2 usage.
#include <QStringList>

// `arguments` starts at the word after "ctl".
int runCtl(const QStringList &arguments);
