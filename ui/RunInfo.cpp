#include "RunInfo.h"

#include "Format.h"

#include "run/RunManifest.h"

#include <QCoreApplication>

#include <filesystem>

namespace dedloc::ui {
namespace {

// The app's default signature status (RunInfo::signatureStatus), listed for lupdate.
[[maybe_unused]] const char *const notChecked = QT_TRANSLATE_NOOP("dedloc::ui::RunInfo", "not checked");

} // namespace

RunInfo runInfoFromManifest(const RunManifest &m)
{
    RunInfo r;
    r.runId = m.runId;
    r.name = m.name;
    r.lead = m.lead;
    r.description = m.description;
    r.model = QCoreApplication::translate("dedloc::ui::RunInfo",
                                          "ALBERT %1 (hidden %2, %3 layers, vocabulary %4), target batch %5 samples")
                  .arg(QString::fromStdString(m.model.preset))
                  .arg(formatCount(m.model.hiddenSize))
                  .arg(formatCount(m.model.numLayers))
                  .arg(formatCount(m.model.vocabSize))
                  .arg(formatCount(m.training.targetBatchSize))
                  .toStdString();
    const QString access =
        m.closed
            ? QCoreApplication::translate("dedloc::ui::RunInfo",
                                          "closed: only volunteers with an access token from the lead")
            : QCoreApplication::translate("dedloc::ui::RunInfo", "open: anyone may join (every link is encrypted)");
    r.access = access.toStdString();
    for (const auto &f : m.corpus.files) {
        if (!r.data.empty())
            r.data += ", ";
        r.data += std::filesystem::path(f.path).filename().string();
    }
    return r;
}

std::string closedRunAccessText(const std::string &tokenPath, bool tokenFileExists)
{
    const QString path = QString::fromStdString(tokenPath);
    if (tokenFileExists)
        return QCoreApplication::translate("dedloc::ui::RunInfo",
                                           "closed: only volunteers with an access token from the lead. Your token: %1")
            .arg(path)
            .toStdString();
    return QCoreApplication::translate(
               "dedloc::ui::RunInfo", "closed: only volunteers with an access token from the lead. You have none yet: "
                                      "send your peer key (dedloc --print-peer-key) to the lead and save the token you "
                                      "get as %1")
        .arg(path)
        .toStdString();
}

QString runInfoText(const std::string &value)
{
    static const char *const context = "dedloc::ui::RunInfo";
    return QCoreApplication::translate(context, value.c_str());
}

} // namespace dedloc::ui
