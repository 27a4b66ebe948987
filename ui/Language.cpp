#include "Language.h"

#include "Format.h"
#include "util/Log.h"

#include <QCoreApplication>
#include <QLibraryInfo>
#include <QPointer>
#include <QTranslator>

namespace dedloc::ui {
namespace {

// Texts Qt draws itself in the window (the settings dialog's buttons). Qt ships no Bengali
// translation of its own (no qtbase_bn.qm), so the window's translation carries these: Qt looks
// them up in every installed translator, under Qt's contexts. Listed for lupdate only.
[[maybe_unused]] const char *const qtOwnTexts[] = {
    QT_TRANSLATE_NOOP("QPlatformTheme", "OK"),    QT_TRANSLATE_NOOP("QPlatformTheme", "Cancel"),
    QT_TRANSLATE_NOOP("QPlatformTheme", "Close"), QT_TRANSLATE_NOOP("QGnomeTheme", "&OK"),
    QT_TRANSLATE_NOOP("QGnomeTheme", "&Cancel"),  QT_TRANSLATE_NOOP("QGnomeTheme", "&Close"),
};

const QString bengaliTranslation = QStringLiteral(":/i18n/dedloc_bn.qm");

// What this unit installed, so that a later call replaces it (owned by the application).
QPointer<QTranslator> windowTranslator;
QPointer<QTranslator> qtTranslator;
QString installed = QStringLiteral("en");

// Numbers, dates and the spin boxes follow the window's language: Bengali digits with Bengali,
// the system's locale with English (unless that is Bengali: then English's).
void setNumberLocale(const QString &language)
{
    const QLocale system = QLocale::system();
    if (language == QLatin1String("bn"))
        QLocale::setDefault(QLocale(QLocale::Bengali, QLocale::Bangladesh));
    else
        QLocale::setDefault(system.language() == QLocale::Bengali ? QLocale(QLocale::English, QLocale::UnitedStates) : system);
}

void removeInstalled(QCoreApplication &app)
{
    for (QPointer<QTranslator> *t : {&windowTranslator, &qtTranslator}) {
        if (*t) {
            app.removeTranslator(*t);
            delete t->data();
        }
        *t = nullptr;
    }
}

} // namespace

QString resolveUiLanguage(const QString &language, const QLocale &system)
{
    const QString wanted = language.trimmed();
    const QLocale locale = wanted.isEmpty() ? system : QLocale(wanted);
    if (locale.language() == QLocale::Bengali)
        return QStringLiteral("bn");
    // The system's C or POSIX locale, or any language the window does not speak: English.
    if (wanted.isEmpty() || locale.language() == QLocale::English)
        return QStringLiteral("en");
    return {};
}

bool installUiLanguage(QCoreApplication &app, const QString &language)
{
    initUiResources();
    const QString resolved = resolveUiLanguage(language);
    removeInstalled(app);
    installed = QStringLiteral("en");
    setNumberLocale(installed);
    if (resolved.isEmpty()) {
        log::warning("ui",
                     "unknown language \"" + language.toStdString() + "\" (bn or en): the window stays in English");
        return false;
    }
    if (resolved == QLatin1String("en")) {
        log::info("ui", "language: English");
        return true;
    }
    auto own = new QTranslator(&app);
    if (!own->load(bengaliTranslation)) {
        delete own;
        log::error("ui", "cannot load the Bengali translation " + bengaliTranslation.toStdString() +
                             ": the window stays in English");
        return false;
    }
    auto qt = new QTranslator(&app);
    if (qt->load(QLocale(QLocale::Bengali), QStringLiteral("qtbase"), QStringLiteral("_"),
                 QLibraryInfo::path(QLibraryInfo::TranslationsPath))) {
        app.installTranslator(qt);
        qtTranslator = qt;
    } else {
        delete qt;
    }
    app.installTranslator(own); // the last installed is asked first: the window's texts win
    windowTranslator = own;
    installed = resolved;
    setNumberLocale(installed);
    log::info("ui", std::string("language: Bengali") + (qtTranslator ? " (with Qt's own translation)" : ""));
    return true;
}

QString uiLanguage()
{
    return installed;
}

bool installChosenUiLanguage(QCoreApplication &app, const QString &setting)
{
    const QString forced = qEnvironmentVariable("DEDLOC_LANGUAGE");
    return installUiLanguage(app, forced.isEmpty() ? setting : forced);
}

} // namespace dedloc::ui
