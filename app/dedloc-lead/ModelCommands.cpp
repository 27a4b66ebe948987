#include "ModelCommands.h"

#include "eval/DownstreamEvaluation.h"
#include "eval/HuggingFaceExport.h"
#include "run/RunManifest.h"
#include "run/RunPaths.h"
#include "system/TorchRuntime.h"
#include "train/Checkpoint.h"
#include "util/AtomicFile.h"
#include "util/Error.h"

#include <QCommandLineParser>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

namespace dedloc::lead {

namespace {

namespace fs = std::filesystem;

QCommandLineOption option(const char *name, const char *help, const char *value = nullptr, const char *fallback = nullptr)
{
    if (!value)
        return {QString::fromLatin1(name), QString::fromLatin1(help)};
    return {QString::fromLatin1(name), QString::fromLatin1(help), QString::fromLatin1(value),
            fallback ? QString::fromLatin1(fallback) : QString()};
}

int bad(const char *command, const std::string &why)
{
    std::fprintf(stderr, "dedloc-lead %s: %s (see --help)\n", command, why.c_str());
    return 2;
}

// The manifest given, else the bundled run's. Throws dedloc::Error when there is none.
RunManifest manifestFrom(const QCommandLineParser &p, const QCommandLineOption &manifest)
{
    if (p.isSet(manifest))
        return loadRunManifest(p.value(manifest).toStdString());
    if (const auto found = findDefaultManifest())
        return loadRunManifest(*found);
    throw Error("no run manifest given and the bundled run is not installed");
}

// A number option: `ok` false (and the reason printed) if it is not a number in [low, high],
// or, for a whole-number option, not a whole number.
double number(const QCommandLineParser &p, const QCommandLineOption &o, double low, double high, bool &ok,
              bool whole = true)
{
    bool parsed = false;
    const double v = p.value(o).toDouble(&parsed);
    if (!parsed || !(v >= low && v <= high) || (whole && v != std::floor(v))) {
        std::fprintf(stderr, "dedloc-lead evaluate: --%s expects %s from %.*g to %.*g, got \"%s\"\n",
                     o.names().front().toLatin1().constData(), whole ? "a whole number" : "a number", whole ? 20 : 6,
                     low, whole ? 20 : 6, high, p.value(o).toLocal8Bit().constData());
        ok = false;
    }
    return v;
}

// The --json file must be writable before minutes of fine-tuning, not after.
std::optional<std::string> unwritableJson(const fs::path &file)
{
    std::error_code ec;
    if (fs::is_directory(file, ec))
        return "--json " + file.string() + " is a directory: give a file name";
    const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
    if (!fs::is_directory(dir, ec) || ::access(dir.c_str(), W_OK | X_OK) != 0)
        return "--json " + file.string() + ": cannot write into " + dir.string();
    return std::nullopt;
}

void printScores(const char *label, const FineTuneResult &r)
{
    std::printf("  %-26s %9.4f %9.4f", label, r.test.accuracy, r.test.macroF1);
    if (r.dev)
        std::printf(" %9.4f %9.4f", r.dev->accuracy, r.dev->macroF1);
    else
        std::printf(" %9s %9s", "-", "-");
    std::printf(" %8.1f\n", r.seconds);
}

void printResult(const DownstreamResult &r)
{
    std::printf("task %s: %zu labels, %zu training and %ld test sentences; %d epochs, batch %d, lr %g, seed %llu\n",
                r.task.c_str(), r.labels.size(), r.trainExamples, r.pretrained.test.examples, r.options.epochs,
                r.options.batchSize, r.options.learningRate, static_cast<unsigned long long>(r.options.seed));
    std::printf("  %-26s %9s %9s %9s %9s %8s\n", "", "test acc", "test F1", "dev acc", "dev F1", "seconds");
    std::string label = r.checkpoint ? "checkpoint" : "random initialisation";
    if (r.epoch)
        label += " (step " + std::to_string(*r.epoch) + ")";
    printScores(label.c_str(), r.pretrained);
    if (r.control)
        printScores("random init (control)", *r.control);
}

} // namespace

int evaluate(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Fine-tune a checkpoint with a classification head on a labelled text set and report accuracy and macro-F1 on "
        "its test split; beside it, the same model fine-tuned from random initialisation with the same budget and seed "
        "(the control: what pretraining adds)."));
    p.addHelpOption();
    const auto manifest = option("manifest", "Run manifest (default: the bundled run): model shape and tokenizer.", "file");
    const auto checkpoint = option("checkpoint", "Checkpoint to evaluate (a trainer's or a kept one, *.ddlc).", "file");
    const auto randomInit = option("random-init", "Evaluate the random initialisation only (no checkpoint).");
    const auto task = option("task",
                             "Task directory: train.tsv, test.tsv (dev.tsv, labels.txt) with columns text and category "
                             "or label (default: the run's task; the bundled run's is SIB-200 Bengali).",
                             "dir");
    const auto epochs = option("epochs", "Passes over the training split (default: 8).", "n", "8");
    const auto batch = option("batch-size", "Sentences per fine-tuning step (default: 16).", "n", "16");
    const auto lr = option("learning-rate", "AdamW peak learning rate (default: 0.0001).", "x", "0.0001");
    const auto maxTokens = option("max-tokens", "Tokens per sentence at most, [CLS] and [SEP] included (default: 128, or the model's positions if fewer).", "n", "128");
    const auto seed = option("seed", "Seed of the head's initialisation, the control's and the batch order (default: 0).", "n", "0");
    const auto noControl = option("no-control", "Skip the random-initialisation control (half the time).");
    const auto threads = option("threads", "Torch CPU threads (default: all cores).", "n", "0");
    const auto json = option("json", "Also write the full result (per-label scores, options) as JSON here.", "file");
    p.addOptions({manifest, checkpoint, randomInit, task, epochs, batch, lr, maxTokens, seed, noControl, threads, json});
    p.process(args);
    if (!p.positionalArguments().isEmpty())
        return bad("evaluate", "unexpected argument " + p.positionalArguments().front().toStdString());
    if (p.isSet(checkpoint) && p.isSet(randomInit))
        return bad("evaluate", "give --checkpoint FILE or --random-init, not both");
    if (!p.isSet(checkpoint) && !p.isSet(randomInit))
        return bad("evaluate", "give --checkpoint FILE, or --random-init");
    if (p.isSet(json))
        if (const auto why = unwritableJson(p.value(json).toStdString()))
            return bad("evaluate", *why);

    bool ok = true;
    DownstreamOptions o;
    o.fineTune.epochs = static_cast<int>(number(p, epochs, 1, 1000, ok));
    o.fineTune.batchSize = static_cast<int>(number(p, batch, 1, 4096, ok));
    o.fineTune.learningRate = number(p, lr, 1e-9, 1.0, ok, false);
    o.fineTune.maxTokens = static_cast<int>(number(p, maxTokens, 3, 1 << 20, ok));
    o.fineTune.seed = static_cast<std::uint64_t>(number(p, seed, 0, 9007199254740992.0, ok));
    const int threadCount = static_cast<int>(number(p, threads, 0, 1024, ok));
    if (!ok)
        return 2;
    o.control = !p.isSet(noControl) && p.isSet(checkpoint);

    const RunManifest run = manifestFrom(p, manifest);
    if (!p.isSet(maxTokens))
        o.fineTune.maxTokens = std::min(o.fineTune.maxTokens, run.model.maxPositions);
    std::optional<fs::path> taskDir;
    if (p.isSet(task))
        taskDir = fs::path(p.value(task).toStdString());
    else
        taskDir = defaultEvaluationTask(run);
    if (!taskDir)
        return bad("evaluate", "the run names no evaluation task: give --task DIR");
    configureTorchThreads(threadCount);
    std::optional<fs::path> file;
    if (p.isSet(checkpoint))
        file = fs::path(p.value(checkpoint).toStdString());
    const auto result = evaluateDownstream(run, file, *taskDir, o);
    if (!result.runId.empty() && result.runId != run.runId)
        std::fprintf(stderr, "dedloc-lead evaluate: note: the checkpoint is of run %s, the manifest's is %s (same shape "
                             "and tokenizer, so it was evaluated)\n",
                     result.runId.c_str(), run.runId.c_str());
    printResult(result);
    if (p.isSet(json))
        writeFileAtomically(p.value(json).toStdString(), result.toJson().dump(2) + "\n");
    return 0;
}

int exportModel(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Write a checkpoint in the Hugging Face layout (config.json, model.safetensors, spiece.model, tokenizer "
        "config, model card), loadable as AlbertForMaskedLM with the transformers library."));
    p.addHelpOption();
    const auto manifest = option("manifest", "Run manifest of the checkpoint (default: the bundled run).", "file");
    const auto checkpoint = option("checkpoint", "Checkpoint to export (*.ddlc).", "file");
    const auto out = option("out", "Output directory (created; files of the same names are replaced).", "dir");
    p.addOptions({manifest, checkpoint, out});
    p.process(args);
    if (!p.positionalArguments().isEmpty())
        return bad("export", "unexpected argument " + p.positionalArguments().front().toStdString());
    if (!p.isSet(checkpoint) || !p.isSet(out))
        return bad("export", "give --checkpoint FILE and --out DIR");
    const RunManifest run = manifestFrom(p, manifest);
    const Checkpoint c = readCheckpointFile(p.value(checkpoint).toStdString());
    const auto files = exportHuggingFace(run, c, p.value(out).toStdString());
    for (const auto &f : files)
        std::printf("wrote %s\n", f.c_str());
    return 0;
}

} // namespace dedloc::lead
