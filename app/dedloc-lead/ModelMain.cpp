// dedloc-lead-model: the process behind `dedloc-lead evaluate` and `dedloc-lead export`
// (ModelCommands.h). A program of its own because both link libtorch, whose start-up (seconds)
// the key and run commands of dedloc-lead should not pay; `dedloc-lead` execs it.
#include "ModelCommands.h"
#include "util/Error.h"
#include "util/Log.h"

#include <QCoreApplication>

#include <cstdio>

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("dedloc-lead"));
    QCoreApplication::setApplicationVersion(QStringLiteral(DEDLOC_VERSION));
    QStringList args = QCoreApplication::arguments();
    const QString command = args.size() >= 2 ? args.takeAt(1) : QString();
    try {
        if (command == QLatin1String("evaluate"))
            return dedloc::lead::evaluate(args);
        if (command == QLatin1String("export"))
            return dedloc::lead::exportModel(args);
    } catch (const dedloc::Error &e) {
        dedloc::log::error("lead", e.what());
        return 2;
    }
    std::fprintf(stderr, "usage: dedloc-lead evaluate|export [options] (run through dedloc-lead)\n");
    return 2;
}
