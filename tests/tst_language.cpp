// The window in Bengali (ui/Language.h, resources/translations/dedloc_bn.ts), offscreen, against a
// fake peer: the same window is built in English and in Bengali (join page, dashboard while
// training, the no-tray notice, the menus, the tray's menu, the settings dialog) and every text a
// volunteer sees is collected; a Bengali text with Latin letters that is also an English one fails
// unless the short allow-list below says why it stays (names, units, the test's own run data).
// Also: the .ts has no unfinished message and covers every tr() of ui/ (lupdate on a copy), the
// compiled-in .qm answers every message, "en" keeps English, DEDLOC_LANGUAGE reaches
// runDesktopApp. DEDLOC_SCREENSHOT_DIR=dir saves window-bn.png, settings-bn.png, and -en, there.
#include "DesktopApp.h"
#include "FakePeer.h"
#include "Format.h"
#include "Language.h"
#include "LogModel.h"
#include "MainWindow.h"
#include "PeersTableModel.h"
#include "RunInfo.h"
#include "Settings.h"
#include "SettingsDialog.h"
#include "TestSupport.h"
#include "TrayController.h"
#include "panels/JoinPage.h"
#include "panels/StatePanel.h"
#include "panels/SwarmPanel.h"
#include "run/RunManifest.h"

#include <QAbstractButton>
#include <QAbstractItemView>
#include <QAbstractProxyModel>
#include <QAbstractSpinBox>
#include <QChartView>
#include <QComboBox>
#include <QGroupBox>
#include <QLabel>
#include <QLibraryInfo>
#include <QMenu>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QTabWidget>
#include <QTextDocumentFragment>
#include <QTimer>
#include <QTranslator>
#include <QXmlStreamReader>
#include <QtTest>

#include <memory>
#include <set>

using namespace dedloc;
using namespace dedloc::ui;

namespace {

QString tsFile()
{
    return QString::fromStdString((test::sourceResources() / "translations" / "dedloc_bn.ts").string());
}

// What the volunteer reads: rich text as plain text, without the accelerator's '&'.
QString readable(QString text)
{
    if (Qt::mightBeRichText(text))
        text = QTextDocumentFragment::fromHtml(text).toPlainText();
    text.replace(QLatin1String("&&"), QChar(0x1));
    text.remove(QLatin1Char('&'));
    text.replace(QChar(0x1), QLatin1Char('&'));
    return text.trimmed();
}

struct Texts {
    QList<QPair<QString, QString>> all; // where, text: for the failure message
    std::set<QString> texts;
    void add(const QString &where, const QString &raw)
    {
        const QString t = readable(raw);
        if (t.isEmpty())
            return;
        texts.insert(t);
        all.append({where, t});
    }
};

void addMenu(Texts &out, const QString &where, QMenu *menu)
{
    out.add(where + QStringLiteral(" menu"), menu->title());
    for (QAction *a : menu->actions()) {
        out.add(where + QStringLiteral(" action"), a->text());
        if (a->menu())
            addMenu(out, where, a->menu());
    }
}

// A view's header and cells; of the log, only the time and level columns (the lines themselves
// are the core's, in English by design).
void addView(Texts &out, QAbstractItemView *view)
{
    QAbstractItemModel *model = view->model();
    if (!model)
        return;
    QAbstractItemModel *source = model;
    while (auto *proxy = qobject_cast<QAbstractProxyModel *>(source))
        source = proxy->sourceModel();
    const bool log = qobject_cast<LogModel *>(source) != nullptr;
    for (int c = 0; c < model->columnCount(); ++c) {
        out.add(QStringLiteral("header"), model->headerData(c, Qt::Horizontal).toString());
        if (log && c > LogModel::Level)
            continue;
        for (int r = 0; r < model->rowCount(); ++r)
            out.add(QStringLiteral("cell"), model->index(r, c).data().toString());
    }
}

// Every text of `root` and its visible children.
void collect(Texts &out, QWidget *root)
{
    QList<QWidget *> widgets{root};
    widgets += root->findChildren<QWidget *>();
    for (QWidget *w : widgets) {
        if (w != root && !w->isVisibleTo(root))
            continue;
        const QString where = QString::fromLatin1(w->metaObject()->className()) + QLatin1Char(' ') + w->objectName();
        if (w->isWindow())
            out.add(where + QStringLiteral(" title"), w->windowTitle());
        if (auto *l = qobject_cast<QLabel *>(w))
            out.add(where, l->text());
        if (auto *b = qobject_cast<QAbstractButton *>(w))
            out.add(where, b->text());
        if (auto *g = qobject_cast<QGroupBox *>(w))
            out.add(where, g->title());
        if (auto *t = qobject_cast<QTabWidget *>(w))
            for (int i = 0; i < t->count(); ++i)
                out.add(where, t->tabText(i));
        if (auto *c = qobject_cast<QComboBox *>(w))
            for (int i = 0; i < c->count(); ++i)
                out.add(where, c->itemText(i));
        if (auto *p = qobject_cast<QProgressBar *>(w); p && p->isTextVisible())
            out.add(where, p->text());
        if (auto *s = qobject_cast<QSpinBox *>(w))
            out.add(where, s->suffix());
        if (auto *s = qobject_cast<QDoubleSpinBox *>(w))
            out.add(where, s->suffix());
        if (auto *s = qobject_cast<QAbstractSpinBox *>(w))
            out.add(where, s->specialValueText());
        if (auto *e = qobject_cast<QPlainTextEdit *>(w))
            out.add(where, e->placeholderText());
        if (auto *v = qobject_cast<QAbstractItemView *>(w))
            addView(out, v);
        if (auto *c = qobject_cast<QChartView *>(w))
            for (auto *axis : c->chart()->axes())
                out.add(where + QStringLiteral(" axis"), axis->titleText());
        if (auto *m = qobject_cast<QMenuBar *>(w))
            for (QAction *a : m->actions())
                if (a->menu())
                    addMenu(out, where, a->menu());
        for (QAction *a : w->actions())
            out.add(where + QStringLiteral(" action"), a->text());
    }
}

// Two GPUs with every reading (GPU 0 trains, as by default), so that the GPU panel's texts are
// collected; their names are the test's data.
const QStringList testGpuNames{QStringLiteral("Fake GeForce 0"), QStringLiteral("Fake GeForce 1")};
std::vector<GpuSample> testGpus()
{
    std::vector<GpuSample> gpus(2);
    for (int i = 0; i < 2; ++i) {
        auto &s = gpus[std::size_t(i)];
        s.vendor = GpuVendor::Nvidia;
        s.index = i;
        s.name = testGpuNames[i].toStdString();
        s.utilisationPercent = 90.0;
        s.memoryUsedBytes = 3ULL << 30;
        s.memoryTotalBytes = 8ULL << 30;
        s.temperatureCelsius = 61.0;
        s.powerWatts = 150.0;
        s.fanPercent = 40.0;
        s.cpuUsagePercent = 50.0;
        s.cpuCount = 2;
    }
    return gpus;
}

RunInfo testRun()
{
    auto run = runInfoFromManifest(loadRunManifest(test::defaultManifest())); // in the installed language
    run.runId = "fake-run";
    return run;
}

// The window of one language, built and driven the same way for both: the join page, the
// dashboard while training (two GPUs, then none chosen), the no-tray notice, the tray's menu and
// the settings dialog.
Texts collectWindow(const QString &language, const QString &screenshotDir = {})
{
    Texts out;
    if (!installUiLanguage(*qApp, language))
        return out;
    QTemporaryDir dir;
    auto settings = Settings::forTesting(dir.filePath(QStringLiteral("settings.ini")));
    test::FakePeer peer;
    {
        DesktopApp::Options o;
        o.trayAvailable = 0; // closing shows the notice
        o.bridge.snapshotIntervalMs = 50;
        o.bridge.gpuProbe = [] { return testGpus(); };
        o.bridge.hostProbe = [](HostObservation &) {};
        DesktopApp app(peer, *settings, testRun(), std::move(o));
        app.start();
        MainWindow &window = app.window();
        collect(out, &window);
        QTest::mouseClick(window.joinPage()->joinButton(), Qt::LeftButton);
        const bool training = QTest::qWaitFor(
            [&] {
                return window.statePanel()->title() == stateTitle(PeerState::Training) &&
                       window.swarmPanel()->lossPoints() >= 2 && app.peers().rowCount() == 3 &&
                       !window.statePanel()->explanation().isEmpty();
            },
            10000);
        if (!training)
            qWarning("the fake peer did not reach Training with the loss chart fed");
        collect(out, &window);
        if (!screenshotDir.isEmpty())
            saveScreenshot(window, QDir(screenshotDir).filePath(QStringLiteral("window-%1.png").arg(language)));
        ResourceCaps caps = settings->caps(); // no GPU chosen: the panel says the CPU trains
        caps.gpus = {};
        settings->setCaps(caps);
        collect(out, &window);
        window.close(); // no tray: the window stays and says why
        collect(out, &window);
        if (auto *trayMenu = qobject_cast<QMenu *>(app.tray().pauseAction()->parent()))
            addMenu(out, QStringLiteral("tray"), trayMenu);
        out.add(QStringLiteral("tray tooltip"), app.tray().toolTip());

        SettingsDialog dialog(*settings, &window);
        dialog.show();
        collect(out, &dialog);
        if (!screenshotDir.isEmpty())
            saveScreenshot(dialog, QDir(screenshotDir).filePath(QStringLiteral("settings-%1.png").arg(language)));
    }
    peer.stop();
    return out;
}

struct TsMessage {
    QString context, source;
    bool unfinished = false; // no translation yet
};

// The live messages of a .ts file (vanished and obsolete ones left out).
std::vector<TsMessage> tsMessages(const QString &path)
{
    std::vector<TsMessage> out;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        qWarning("cannot read %s", qPrintable(path));
        return out;
    }
    QString context, source;
    QXmlStreamReader ts(&file);
    while (!ts.atEnd()) {
        if (ts.readNext() != QXmlStreamReader::StartElement)
            continue;
        if (ts.name() == QLatin1String("name")) {
            context = ts.readElementText();
        } else if (ts.name() == QLatin1String("source")) {
            source = ts.readElementText();
        } else if (ts.name() == QLatin1String("translation")) {
            const QString type = ts.attributes().value(QLatin1String("type")).toString();
            const QString text = ts.readElementText();
            if (type != QLatin1String("vanished") && type != QLatin1String("obsolete"))
                out.push_back({context, source, type == QLatin1String("unfinished") || text.isEmpty()});
        }
    }
    if (ts.hasError())
        qWarning("%s: %s", qPrintable(path), qPrintable(ts.errorString()));
    return out;
}

bool hasLatinLetter(const QString &text)
{
    static const QRegularExpression latin(QStringLiteral("[A-Za-z]"));
    return latin.match(text).hasMatch();
}

bool hasBengali(const QString &text)
{
    for (const QChar c : text)
        if (c.unicode() >= 0x0980 && c.unicode() <= 0x09ff)
            return true;
    return false;
}

// Texts that legitimately read the same in both languages.
bool allowedToStay(const QString &text, const RunInfo &run)
{
    // Names, the hardware and the loss, which Bengali speakers say in English.
    // "English" names itself in the language choice (each language in its own words).
    static const QStringList names{QStringLiteral("DeDLOC"), QStringLiteral("GPU"), QStringLiteral("CPU"),
                                   QStringLiteral("loss"), QStringLiteral("English")};
    // Numbers with units, peer ids (hexadecimal), the fake device: data, not words.
    static const QRegularExpression data(
        QStringLiteral("^([-+0-9.,:\\s\\x{2009}%°]*(B|KiB|MiB|GiB|TiB|KiB/s|W|°C|%)?|[0-9a-f]{16,}|cpu \\(fake\\))$"));
    if (names.contains(text) || data.match(text).hasMatch() || testGpuNames.contains(text))
        return true;
    // The run as the lead wrote its manifest: name, lead, description, corpus files.
    const QString name = QString::fromStdString(run.name);
    const QStringList runData{name, QString::fromStdString(run.lead), QString::fromStdString(run.description),
                              QString::fromStdString(run.data),
                              name + QStringLiteral(" (") + QString::fromStdString(run.runId) + QLatin1Char(')')};
    return runData.contains(text);
}

// A Latin digit in a Bengali text is data: a peer id, the run's texts, the test's devices, the
// core's words (the last round), the schedule's syntax; numbers are written ০-৯.
bool latinDigitAllowed(const QString &where, const QString &text, const RunInfo &run)
{
    static const QRegularExpression peerId(QStringLiteral("^[0-9a-f]{8,}$"));
    return !text.contains(QRegularExpression(QStringLiteral("[0-9]"))) || peerId.match(text).hasMatch()
           || allowedToStay(text, run) || text.contains(QString::fromStdString(run.runId))
           || text.contains(QStringLiteral("averaged with")) || where.contains(QStringLiteral("weeklySchedule"))
           || text.contains(testGpuNames[0]) || text.contains(testGpuNames[1]);
}

} // namespace

class TestLanguage final : public QObject {
    Q_OBJECT

  private:
    QTemporaryDir m_home;

  private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_home.isValid());
        qputenv("XDG_CONFIG_HOME", m_home.filePath("config").toUtf8());
        qputenv("XDG_DATA_HOME", m_home.filePath("data").toUtf8());
    }

    void cleanup() { installUiLanguage(*qApp, QStringLiteral("en")); }

    void languageFollowsTheRequestOrTheSystem()
    {
        const QLocale bangladesh(QLocale::Bengali, QLocale::Bangladesh);
        const QLocale us(QLocale::English, QLocale::UnitedStates);
        QCOMPARE(resolveUiLanguage(QString(), bangladesh), QStringLiteral("bn"));
        QCOMPARE(resolveUiLanguage(QString(), QLocale(QLocale::Bengali, QLocale::India)), QStringLiteral("bn"));
        QCOMPARE(resolveUiLanguage(QString(), us), QStringLiteral("en"));
        QCOMPARE(resolveUiLanguage(QString(), QLocale::c()), QStringLiteral("en"));
        QCOMPARE(resolveUiLanguage(QString(), QLocale(QLocale::German)), QStringLiteral("en"));
        QCOMPARE(resolveUiLanguage(QStringLiteral("bn"), us), QStringLiteral("bn"));
        QCOMPARE(resolveUiLanguage(QStringLiteral("bn_BD"), us), QStringLiteral("bn"));
        QCOMPARE(resolveUiLanguage(QStringLiteral("en"), bangladesh), QStringLiteral("en"));
        QCOMPARE(resolveUiLanguage(QStringLiteral("en-GB"), bangladesh), QStringLiteral("en"));
        QCOMPARE(resolveUiLanguage(QStringLiteral("fr"), bangladesh), QString());
        QCOMPARE(resolveUiLanguage(QStringLiteral("bengali?"), bangladesh), QString());

        QVERIFY(installUiLanguage(*qApp, QStringLiteral("bn")));
        QCOMPARE(uiLanguage(), QStringLiteral("bn"));
        QCOMPARE(QCoreApplication::translate("dedloc::ui::TrayController", "Quit"), QStringLiteral("প্রস্থান"));
        QVERIFY(installUiLanguage(*qApp, QStringLiteral("bn"))); // a second call replaces the first
        QCOMPARE(QCoreApplication::translate("dedloc::ui::TrayController", "Quit"), QStringLiteral("প্রস্থান"));
        QVERIFY(!installUiLanguage(*qApp, QStringLiteral("fr"))); // unknown: English
        QCOMPARE(uiLanguage(), QStringLiteral("en"));
        QCOMPARE(QCoreApplication::translate("dedloc::ui::TrayController", "Quit"), QStringLiteral("Quit"));
    }

    // (b) Every message of the .ts is translated, lrelease compiled all of them in, and the .ts
    // covers every tr() of ui/ (lupdate run over a copy finds nothing new).
    void translationFileIsComplete()
    {
        QTranslator compiled;
        QVERIFY(compiled.load(QStringLiteral(":/i18n/dedloc_bn.qm")));
        int translated = 0;
        QStringList problems;
        const auto messages = tsMessages(tsFile());
        for (const auto &m : messages) {
            if (m.unfinished)
                problems << QStringLiteral("unfinished: %1 \"%2\"").arg(m.context, m.source);
            else
                ++translated;
            if (compiled.translate(m.context.toUtf8(), m.source.toUtf8()).isEmpty())
                problems << QStringLiteral("not in the compiled .qm: %1 \"%2\"").arg(m.context, m.source);
        }
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join('\n')));
        QCOMPARE(translated, int(messages.size()));
        QVERIFY(messages.size() >= 150);
        qInfo("%d of %d messages translated", translated, int(messages.size()));

        const QString lupdate = QLibraryInfo::path(QLibraryInfo::BinariesPath) + QStringLiteral("/lupdate");
        if (!QFileInfo(lupdate).isExecutable())
            QSKIP("no lupdate (qt6-l10n-tools): cannot check that the .ts covers ui/");
        QTemporaryDir dir;
        const QString copy = dir.filePath(QStringLiteral("dedloc_bn.ts"));
        QVERIFY(QFile::copy(tsFile(), copy));
        QFile::setPermissions(copy, QFile::ReadOwner | QFile::WriteOwner);
        const QString ui = QString::fromStdString((test::sourceResources().parent_path() / "ui").string());
        QProcess p;
        p.start(lupdate, {QStringLiteral("-silent"), ui, QStringLiteral("-ts"), copy});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        QStringList missing;
        for (const auto &m : tsMessages(copy))
            if (m.unfinished)
                missing << m.context + QStringLiteral(": ") + m.source;
        QVERIFY2(missing.isEmpty(),
                 qPrintable(QStringLiteral("ui/ has texts that resources/translations/dedloc_bn.ts lacks "
                                           "(/usr/lib/qt6/bin/lupdate ui -ts resources/translations/"
                                           "dedloc_bn.ts, then translate them):\n") +
                            missing.join('\n')));
    }

    // (a) In Bengali no text the volunteer sees is the English one; (b) numbers use ০-৯.
    void bengaliWindowHasNoEnglishLeft()
    {
        const QString shots = qEnvironmentVariable("DEDLOC_SCREENSHOT_DIR");
        const Texts english = collectWindow(QStringLiteral("en"), shots);
        QVERIFY(english.texts.size() > 60);
        const Texts bengali = collectWindow(QStringLiteral("bn"), shots);
        QCOMPARE(uiLanguage(), QStringLiteral("bn"));
        QVERIFY(bengali.texts.size() > 60);
        const RunInfo run = testRun(); // the run data as the window got it
        QStringList untranslated, latin; // (b) numbers and times in Bengali digits
        int bengaliDigits = 0;
        for (const auto &[where, text] : bengali.all) {
            if (hasLatinLetter(text) && english.texts.count(text) && !allowedToStay(text, run))
                untranslated << where + QStringLiteral(": ") + text;
            if (!latinDigitAllowed(where, text, run))
                latin << where + QStringLiteral(": ") + text;
            for (const QChar c : text)
                bengaliDigits += c.unicode() >= 0x09e6 && c.unicode() <= 0x09ef ? 1 : 0;
        }
        untranslated.removeDuplicates();
        QVERIFY2(untranslated.isEmpty(), qPrintable(QStringLiteral("still in English:\n") + untranslated.join('\n')));
        QVERIFY2(latin.isEmpty(), qPrintable(QStringLiteral("Latin digits in Bengali:\n") + latin.join('\n')));
        QVERIFY2(bengaliDigits > 30, qPrintable(QString::number(bengaliDigits)));
        int withBengali = 0;
        for (const QString &t : bengali.texts)
            withBengali += hasBengali(t) ? 1 : 0;
        QVERIFY2(withBengali > 60, qPrintable(QString::number(withBengali)));
        if (!shots.isEmpty()) {
            QVERIFY(!QImage(QDir(shots).filePath(QStringLiteral("window-bn.png"))).isNull());
            QVERIFY(!QImage(QDir(shots).filePath(QStringLiteral("settings-bn.png"))).isNull());
            QVERIFY(!QImage(QDir(shots).filePath(QStringLiteral("settings-en.png"))).isNull());
        }
    }

    // (c) "en" keeps every text English.
    void englishStaysEnglish()
    {
        const Texts english = collectWindow(QStringLiteral("en"));
        QCOMPARE(uiLanguage(), QStringLiteral("en"));
        for (const auto &[where, text] : english.all) // but Bengali names itself in the language choice
            QVERIFY2(!hasBengali(text) || text == QStringLiteral("বাংলা"), qPrintable(where + QStringLiteral(": ") + text));
        for (const char *expected : {"Your contribution", "Training", "Join", "Pause until tomorrow", "DeDLOC settings",
                                     "Heat and noise", "Last report", "Cancel"})
            QVERIFY2(english.texts.count(QString::fromUtf8(expected)), expected);
    }

    // The join page's fixed run texts follow the language even when the app made them earlier.
    void runTextsMadeBeforeTheLanguageFollowIt()
    {
        RunInfo run = testRun(); // English: no translation installed yet
        QCOMPARE(run.signatureStatus, std::string("not checked"));
        QVERIFY(QString::fromStdString(run.access).startsWith(QStringLiteral("open:")));
        QVERIFY(installUiLanguage(*qApp, QStringLiteral("bn")));
        QCOMPARE(runInfoText(run.signatureStatus), QStringLiteral("যাচাই করা হয়নি"));
        QVERIFY(hasBengali(runInfoText(run.access)));
        QCOMPARE(runInfoText("Bengali ALBERT"), QStringLiteral("Bengali ALBERT")); // data stays as it is
        QVERIFY(hasBengali(QString::fromStdString(closedRunAccessText("/tmp/access.token", false))));
    }

    // runDesktopApp reads DEDLOC_LANGUAGE before it builds the window.
    void desktopAppReadsTheEnvironment()
    {
        qputenv("DEDLOC_LANGUAGE", "bn");
        test::FakePeer peer;
        RunInfo run;
        run.runId = "fake-run";
        run.name = "Fake run";
        QString title;
        DesktopRunOptions options;
        options.onStarted = [&](DesktopApp &desktop) {
            title = desktop.window().windowTitle();
            QTimer::singleShot(0, qApp, [] { QCoreApplication::exit(0); });
        };
        const int code = runDesktopApp(*qApp, peer, run, options);
        qunsetenv("DEDLOC_LANGUAGE");
        QCOMPARE(code, 0);
        QCOMPARE(title, QStringLiteral("DeDLOC ডেস্কটপ - Fake run"));
        QCOMPARE(uiLanguage(), QStringLiteral("bn"));
    }
};

QTEST_MAIN(TestLanguage)
#include "tst_language.moc"
