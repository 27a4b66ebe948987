#pragma once
// The volunteer's contribution record, exported: this peer's own per-step record (the CSV the
// trainer keeps in its run directory: step,time,samples,loss) with one more column, "monitor":
// "yes" for a step the swarm's monitor recorded, "no" for a step within the monitor's span that
// it did not record, "" where the monitor has not said (no record yet, or a step after its
// newest). Also the sentence the window shows beside the counts.
// Errors: returns false with `error` ("cannot read ...", "cannot write ...", "... is not a
// contribution record"); a partial output file is never left behind (QSaveFile).
// Threads: any; one call at a time per output file.
#include "face/PeerStatus.h"

#include <QString>

namespace dedloc::ui {

bool exportContributionRecord(const QString &record, const MonitorCredit &credit, const QString &output, QString *error);

// "1 234 samples in 40 steps, through step 57: matches your record" / "... the monitor missed 2
// of your steps (64 samples)" / "no monitor has answered yet".
[[nodiscard]] QString monitorCreditText(const PeerSnapshot &snapshot);

} // namespace dedloc::ui
