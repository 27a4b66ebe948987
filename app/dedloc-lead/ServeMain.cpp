// dedloc-lead-serve: the process behind `dedloc-lead serve` (ServeCommand.h). A program of its
// own because serve runs a monitor peer and so links libtorch, whose start-up (seconds) the
// key and run commands of dedloc-lead should not pay; `dedloc-lead serve` execs it (same PID,
// so systemd and signals see one process).
#include "ServeCommand.h"
#include "util/Error.h"
#include "util/Log.h"

#include <QCoreApplication>

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("dedloc-lead"));
    QCoreApplication::setApplicationVersion(QStringLiteral(DEDLOC_VERSION));
    try {
        return dedloc::lead::serve(QCoreApplication::arguments());
    } catch (const dedloc::Error &e) {
        dedloc::log::error("serve", e.what());
        return 2;
    }
}
