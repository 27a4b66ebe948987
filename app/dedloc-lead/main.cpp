// dedloc-lead: the project lead's tool.
//   dedloc-lead make-run --corpus FILE [--corpus FILE...] --out DIR --run-id ID [options]
//   dedloc-lead verify-run MANIFEST
//   dedloc-lead keygen | sign | verify | rotate-key | issue-token   (KeyCommands.h)
//   dedloc-lead serve [options]   the bootstrap node and monitor (ServeCommand.h; execs dedloc-lead-serve)
#include "KeyCommands.h"
#include "compress/Compression.h"
#include "run/RunMaker.h"
#include "run/RunManifest.h"
#include "util/Error.h"
#include "util/Log.h"

#include <QCommandLineParser>
#include <QCoreApplication>

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

int usage()
{
    std::fprintf(stderr,
                 "usage: dedloc-lead <command> [options]\n"
                 "commands:\n"
                 "  make-run     train a tokenizer on a corpus and write a run (manifest + files)\n"
                 "  verify-run   check a run manifest and the hashes of its files\n"
                 "  keygen       make a lead key pair (minisign formats)\n"
                 "  sign         sign files (FILE.minisig, minisign-compatible)\n"
                 "  verify       verify a file against its .minisig and a public key\n"
                 "  rotate-key   let a run's lead key be replaced: the new key signed by the old one\n"
                 "  issue-token  admit a peer's key to a closed run (access token)\n"
                 "  serve        bootstrap node and monitor: metrics, kept states, JSON status over HTTP\n"
                 "  evaluate     fine-tune a checkpoint on a labelled text set: accuracy, macro-F1, control\n"
                 "  export       write a checkpoint in the Hugging Face layout (config.json, model.safetensors)\n"
                 "Run `dedloc-lead <command> --help` for the options of a command.\n");
    return 2;
}

int makeRun(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Make a run: copy the corpus, train a SentencePiece unigram tokenizer, write manifest.json."));
    p.addHelpOption();
    const QCommandLineOption corpus(QStringLiteral("corpus"), QStringLiteral("UTF-8 corpus file (repeatable)."), QStringLiteral("file"));
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Output directory."), QStringLiteral("dir"));
    const QCommandLineOption runId(QStringLiteral("run-id"), QStringLiteral("Run id: [A-Za-z0-9._-]{1,64}."), QStringLiteral("id"));
    const QCommandLineOption name(QStringLiteral("name"), QStringLiteral("Name shown to volunteers."), QStringLiteral("text"), QString());
    const QCommandLineOption lead(QStringLiteral("lead"), QStringLiteral("Who leads the run."), QStringLiteral("text"), QString());
    const QCommandLineOption description(QStringLiteral("description"), QStringLiteral("One paragraph about the run."), QStringLiteral("text"), QString());
    const QCommandLineOption preset(QStringLiteral("preset"), QStringLiteral("Model preset: tiny, default, large."), QStringLiteral("name"), QStringLiteral("default"));
    const QCommandLineOption vocab(QStringLiteral("vocab-size"), QStringLiteral("Tokenizer vocabulary."), QStringLiteral("n"), QStringLiteral("8000"));
    const QCommandLineOption seqLen(QStringLiteral("sequence-length"), QStringLiteral("Tokens per sequence."), QStringLiteral("n"), QStringLiteral("128"));
    const QCommandLineOption target(QStringLiteral("target-batch-size"), QStringLiteral("Samples per optimizer step (swarm-wide)."), QStringLiteral("n"), QStringLiteral("256"));
    const QCommandLineOption micro(QStringLiteral("micro-batch-size"), QStringLiteral("Samples per forward/backward pass."), QStringLiteral("n"), QStringLiteral("16"));
    const QCommandLineOption lr(QStringLiteral("learning-rate"), QStringLiteral("LAMB peak learning rate."), QStringLiteral("x"), QStringLiteral("0.00176"));
    const QCommandLineOption warmup(QStringLiteral("warmup-steps"), QStringLiteral("Linear warm-up steps."), QStringLiteral("n"), QStringLiteral("100"));
    const QCommandLineOption total(QStringLiteral("total-steps"), QStringLiteral("Steps until the rate decays to 0."), QStringLiteral("n"), QStringLiteral("5000"));
    const QCommandLineOption keepTokenizer(QStringLiteral("keep-tokenizer"), QStringLiteral("Reuse DIR/tokenizer.model instead of training one."));
    const QCommandLineOption closed(QStringLiteral("closed"), QStringLiteral("A closed run: only peers with an access token (issue-token) may join."));
    const QCommandLineOption delayed(QStringLiteral("delayed-parameter-updates"),
                                     QStringLiteral("Average each step while the next is computed (one step stale; for slow uplinks)."));
    const QCommandLineOption local(QStringLiteral("local-updates"),
                                   QStringLiteral("Local updates (DiLoCo): inner LAMB steps of n samples, the swarm "
                                                  "averages pseudo-gradients at each global step."),
                                   QStringLiteral("n"));
    const QCommandLineOption outerLr(QStringLiteral("outer-learning-rate"),
                                     QStringLiteral("Outer Nesterov step's rate (local updates; default 0.7)."), QStringLiteral("x"),
                                     QStringLiteral("0.7"));
    const QCommandLineOption outerMomentum(QStringLiteral("outer-momentum"),
                                           QStringLiteral("Outer Nesterov momentum (local updates; default 0.9)."),
                                           QStringLiteral("x"), QStringLiteral("0.9"));
    const QCommandLineOption codec(QStringLiteral("compression"),
                                   QStringLiteral("Codec of the averaged values: fp16, uniform8bit, "
                                                  "blockwise8bit, size_adaptive, none, or topk4bit (sparse, "
                                                  "with error feedback; for --local-updates)."),
                                   QStringLiteral("name"), QStringLiteral("fp16"));
    p.addOptions({corpus, out, runId, name, lead, description, preset, vocab, seqLen, target, micro, lr, warmup,
                  total, keepTokenizer, closed, delayed, local, outerLr, outerMomentum, codec});
    p.process(args);
    if (!p.isSet(corpus) || !p.isSet(out) || !p.isSet(runId)) {
        std::fprintf(stderr, "dedloc-lead make-run: --corpus, --out and --run-id are required\n");
        return 2;
    }
    dedloc::MakeRunOptions o;
    for (const auto &c : p.values(corpus))
        o.corpus.emplace_back(c.toStdString());
    o.outputDir = p.value(out).toStdString();
    o.runId = p.value(runId).toStdString();
    o.name = p.isSet(name) ? p.value(name).toStdString() : o.runId;
    o.lead = p.value(lead).toStdString();
    o.description = p.value(description).toStdString();
    o.preset = p.value(preset).toStdString();
    // The first option whose value is not a number, named in the error.
    QString notANumber;
    const auto parsed = [&](const QCommandLineOption &option, auto convert) {
        bool ok = false;
        const auto v = convert(p.value(option), &ok);
        if (!ok && notANumber.isEmpty())
            notANumber = option.names().first();
        return v;
    };
    const auto integer = [&](const QCommandLineOption &option) {
        return parsed(option, [](const QString &text, bool *ok) { return text.toInt(ok); });
    };
    const auto real = [&](const QCommandLineOption &option) {
        return parsed(option, [](const QString &text, bool *ok) {
            const double v = text.toDouble(ok);
            *ok = *ok && std::isfinite(v); // "nan" and "inf" parse, but are no setting
            return v;
        });
    };
    o.vocabSize = integer(vocab);
    o.sequenceLength = integer(seqLen);
    o.targetBatchSize = integer(target);
    o.microBatchSize = integer(micro);
    o.learningRate = real(lr);
    o.warmupSteps = integer(warmup);
    o.totalSteps = integer(total);
    o.retrainTokenizer = !p.isSet(keepTokenizer);
    o.closed = p.isSet(closed);
    o.delayedParameterUpdates = p.isSet(delayed);
    o.outerLearningRate = real(outerLr);
    o.outerMomentum = real(outerMomentum);
    if (p.isSet(local)) {
        o.localUpdatesInnerBatch = integer(local);
        if (notANumber.isEmpty() && o.localUpdatesInnerBatch <= 0) {
            std::fprintf(stderr, "dedloc-lead make-run: --local-updates takes the samples of each inner step (1 or "
                                 "more), got %s\n", qPrintable(p.value(local)));
            return 2;
        }
    } else if (p.isSet(outerLr) || p.isSet(outerMomentum)) {
        std::fprintf(stderr, "dedloc-lead make-run: --outer-learning-rate and --outer-momentum apply to "
                             "--local-updates only\n");
        return 2;
    }
    if (!notANumber.isEmpty()) {
        std::fprintf(stderr, "dedloc-lead make-run: --%s takes a number, got \"%s\"\n", qPrintable(notANumber),
                     qPrintable(p.value(notANumber)));
        return 2;
    }
    if (const auto c = dedloc::compressionFromName(p.value(codec).toStdString());
        c && *c != dedloc::Compression::SparseFp16) { // a wire-only codec
        o.compression = *c;
    } else {
        std::fprintf(stderr, "dedloc-lead make-run: unknown --compression %s (%s)\n", qPrintable(p.value(codec)),
                     dedloc::compressionChoices().c_str());
        return 2;
    }
    const auto m = dedloc::makeRun(o);
    std::printf("wrote %s (%s run %s, %d-token tokenizer, preset %s)\n", (o.outputDir / "manifest.json").c_str(),
                m.closed ? "closed" : "open", m.runId.c_str(), m.model.vocabSize, m.model.preset.c_str());
    return 0;
}

// The commands that link libtorch live in programs of their own, so that the key and run
// commands start in milliseconds, not seconds: `serve` in dedloc-lead-serve (it runs a monitor
// peer), `evaluate` and `export` in dedloc-lead-model. Found next to this executable (build
// tree) or in ../lib/dedloc (packages); exec'ed so that they keep this process's PID.
int execHelper(const char *program, const char *command, int argc, char *argv[])
{
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    std::vector<std::filesystem::path> candidates;
    if (!ec) {
        candidates.push_back(exe.parent_path() / program);
        candidates.push_back(exe.parent_path().parent_path() / "lib" / "dedloc" / program);
    }
    std::string shownName = std::string("dedloc-lead ") + command; // argv[0]: what ps and --help show
    for (const auto &helper : candidates) {
        if (::access(helper.c_str(), X_OK) != 0)
            continue;
        std::vector<char *> args;
        std::string commandArg = command;
        args.push_back(shownName.data());
        if (std::strcmp(program, "dedloc-lead-serve") != 0)
            args.push_back(commandArg.data()); // dedloc-lead-model runs several commands
        for (int i = 2; i < argc; ++i)         // drop the command
            args.push_back(argv[i]);
        args.push_back(nullptr);
        ::execv(helper.c_str(), args.data());
        std::fprintf(stderr, "%s: cannot run %s: %s\n", shownName.c_str(), helper.c_str(), std::strerror(errno));
        return 2;
    }
    std::fprintf(stderr, "%s: %s is not installed next to dedloc-lead or in ../lib/dedloc (an incomplete installation)\n",
                 shownName.c_str(), program);
    return 2;
}

int verifyRun(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Check a run manifest and the SHA-256 of its tokenizer and corpus."));
    p.addHelpOption();
    p.addPositionalArgument(QStringLiteral("manifest"), QStringLiteral("manifest.json"));
    p.process(args);
    if (p.positionalArguments().size() != 1) {
        std::fprintf(stderr, "dedloc-lead verify-run: give one manifest file\n");
        return 2;
    }
    const auto m = dedloc::loadRunManifest(p.positionalArguments().front().toStdString());
    dedloc::verifyRunFiles(m);
    std::printf("run %s: manifest valid, tokenizer and %zu corpus file(s) match their SHA-256 (the signature is "
                "not checked here: dedloc-lead verify MANIFEST --public KEY does)\n",
                m.runId.c_str(), m.corpus.files.size());
    return 0;
}

} // namespace

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("dedloc-lead"));
    QCoreApplication::setApplicationVersion(QStringLiteral(DEDLOC_VERSION));
    QStringList args = QCoreApplication::arguments();
    if (args.size() < 2)
        return usage();
    const QString command = args.takeAt(1);
    try {
        if (command == QLatin1String("make-run"))
            return makeRun(args);
        if (command == QLatin1String("verify-run"))
            return verifyRun(args);
        if (command == QLatin1String("keygen"))
            return dedloc::lead::keygen(args);
        if (command == QLatin1String("sign"))
            return dedloc::lead::sign(args);
        if (command == QLatin1String("verify"))
            return dedloc::lead::verify(args);
        if (command == QLatin1String("rotate-key"))
            return dedloc::lead::rotateKey(args);
        if (command == QLatin1String("issue-token"))
            return dedloc::lead::issueToken(args);
        if (command == QLatin1String("serve"))
            return execHelper("dedloc-lead-serve", "serve", argc, argv);
        if (command == QLatin1String("evaluate") || command == QLatin1String("export"))
            return execHelper("dedloc-lead-model", command == QLatin1String("evaluate") ? "evaluate" : "export", argc,
                              argv);
        if (command == QLatin1String("--version")) {
            std::printf("dedloc-lead %s\n", DEDLOC_VERSION);
            return 0;
        }
    } catch (const dedloc::Error &e) {
        dedloc::log::error("lead", e.what());
        return 2;
    }
    return usage();
}
