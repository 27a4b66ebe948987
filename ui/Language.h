#pragma once
// The window's language: Bengali (বাংলা) or English, the language the volunteer interface was
// written in. The Bengali texts are compiled in (resources/translations/dedloc_bn.ts, embedded as
// :/i18n/dedloc_bn.qm by ui/CMakeLists.txt), so the installed program needs no file beside it.
//
// runDesktopApp (DesktopApp.h) calls installUiLanguage right at its start with the value of the
// environment variable DEDLOC_LANGUAGE:
//     DEDLOC_LANGUAGE=bn   Bengali, whatever the system's locale
//     DEDLOC_LANGUAGE=en   English, whatever the system's locale
//     unset or empty       the system's locale (QLocale::system()): Bengali when its language is
//                          Bengali (bn_BD, bn_IN), English otherwise
// A caller that offers its own choice (a setting) calls installUiLanguage before the widgets are
// built; a second call replaces what the first installed.
//
// Texts are translated when a widget is made: widgets built before a call keep their language
// (there is no live switch; the app is restarted to change it). Numbers and times are written
// with the language's digits (Bengali: ০-৯; Format.h localDigits) and the default QLocale
// follows the language (spin boxes, the chart's axes, progress bars): Bengali (bn_BD) for
// Bengali; for English the system's locale (en_US where the system's is Bengali).
//
// Threads: GUI thread only (QCoreApplication::installTranslator), with the application alive.
#include <QLocale>
#include <QString>

class QCoreApplication;

namespace dedloc::ui {

// The language a request stands for: "bn" or "en". "" follows `system`; "bn", "en" and locale
// names such as "bn_BD" or "en-GB" name one. Anything else (a language the window does not speak,
// a typo) gives "" (the caller falls back to English).
[[nodiscard]] QString resolveUiLanguage(const QString &language, const QLocale &system = QLocale::system());

// Installs the translation of the window's texts for `language` (as resolveUiLanguage reads it)
// and, where the system has one (qtbase_bn.qm of Qt's translations), Qt's own for Bengali; the
// Bengali texts of the dialog buttons Qt draws (OK, Cancel) come with the window's own. English
// removes what an earlier call installed. Errors: returns false, logs why and leaves the window in
// English when the language is unknown or the compiled-in Bengali translation cannot be loaded.
bool installUiLanguage(QCoreApplication &app, const QString &language);

// The volunteer's choice: DEDLOC_LANGUAGE when set, else `setting` (Settings::language(): "" the
// system's, "bn" or "en"); installs it as installUiLanguage does.
bool installChosenUiLanguage(QCoreApplication &app, const QString &setting);

// The language installed by the last successful installUiLanguage: "bn" or "en" ("en" before any).
[[nodiscard]] QString uiLanguage();

} // namespace dedloc::ui
