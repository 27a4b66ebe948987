// Communication benchmark (root only): a monitor and N trainers of the bundled run, each on a
// public host of an emulated internet (tests/support/EmulatedInternet: network namespaces, tc
// tbf on both ends of every trainer's link, MBIT each way), train for SECONDS in each averaging
// mode, one mode after the other on the same machine:
//   gradients  the mode of DeDLOC: the step's round runs, then the next micro-batch;
//   delayed    delayed parameter updates: the round runs beside the next step's micro-batches;
//   gradients8bit, delayed8bit  the same two with the gradients in 8 bits (blockwise8bit);
//   local      local updates (DiLoCo): inner LAMB steps of INNER samples, an outer step (the
//              round, of pseudo-gradients) every LOCAL_TARGET samples of the swarm, fp16;
//   local8bit  the same with the pseudo-gradients in 8 bits (uniform8bit);
//   overlapped local8bit with delayed parameter updates: the outer step's round runs beside the
//              next inner steps;
//   sparse     local updates with sparse pseudo-gradients (topk4bit: 1/64 of each block, 4-bit
//              values, error feedback; sparse fp16 averages back);
//   overlappedsparse  sparse with delayed parameter updates.
// The runs use the same manifest but for the "averaging" field, the codec and (local modes) the
// target batch size, the schedule's steps scaled by the batches' ratio (the same warm-up in
// samples) and validation after every outer step (rewritten with absolute paths,
// signed by a throw-away key), and the product's reference timeouts (15 s / 30 s).
// Per mode it prints: global steps, steps every trainer averaged, the median round_s, the
// swarm's samples/s, compute utilisation (the trainers' `utilisation` weighted by each step's
// interval), the bytes every trainer sent (the kernel's count of its namespace's interfaces:
// rounds, state averaging, state served to the monitor, the DHT and the control plane, all of
// it) per step, per sample and per second, and the last validation loss with the samples it was
// reached at.
//
//   bench_communication [--mbit 10] [--trainers 4] [--seconds 180] [--target-batch-size N]
//                       [--modes gradients,delayed,gradients8bit,delayed8bit,local,local8bit,
//                                overlapped,sparse,overlappedsparse]
//                       [--inner-batch-size 32]
//                       [--local-target-batch-size 2048] [--outer-learning-rate 0.7]
//                       [--outer-momentum 0.9] [--max-progress-period S (default: the product's, 5)]
//
// Needs root, iproute2 and nftables (EmulatedInternet::available). Run on an idle machine: the
// trainers share its cores (1 torch thread each), so figures vary between machines and runs.
#include "BenchProcesses.h"   // installStopSignals
#include "EmulatedInternet.h" // tests/support
#include "SwarmHarness.h"     // tests/support

#include "run/RunManifest.h"
#include "run/RunPaths.h"
#include "security/Minisign.h"
#include "util/AtomicFile.h"

#include <QCoreApplication>
#include <QProcess>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace dedloc;
using namespace dedloc::test;

namespace {

struct Options {
    double mbit = 10.0;
    int trainers = 4;
    double seconds = 180.0;
    int targetBatchSize = 0; // 0: the bundled run's
    std::vector<std::string> modes = {"gradients", "delayed"};
    int innerBatchSize = 32;
    int localTargetBatchSize = 2048;
    double outerLearningRate = 0.7;
    double outerMomentum = 0.9;
    double maxProgressPeriod = 0.0; // 0: the product's default (adaptive); 1: a fixed 1 s period
};

bool isLocal(const std::string &mode)
{
    return mode == "local" || mode == "local8bit" || mode == "overlapped" || mode == "sparse"
           || mode == "overlappedsparse";
}

std::vector<std::string> split(const std::string &text)
{
    std::vector<std::string> out;
    std::stringstream in(text);
    for (std::string part; std::getline(in, part, ',');)
        out.push_back(part);
    return out;
}

Options parse(int argc, char **argv)
{
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i], value = argv[i + 1];
        if (key == "--mbit")
            o.mbit = std::stod(value);
        else if (key == "--trainers")
            o.trainers = std::stoi(value);
        else if (key == "--seconds")
            o.seconds = std::stod(value);
        else if (key == "--target-batch-size")
            o.targetBatchSize = std::stoi(value);
        else if (key == "--modes")
            o.modes = split(value);
        else if (key == "--inner-batch-size")
            o.innerBatchSize = std::stoi(value);
        else if (key == "--local-target-batch-size")
            o.localTargetBatchSize = std::stoi(value);
        else if (key == "--outer-learning-rate")
            o.outerLearningRate = std::stod(value);
        else if (key == "--outer-momentum")
            o.outerMomentum = std::stod(value);
        else if (key == "--max-progress-period")
            o.maxProgressPeriod = std::stod(value);
        else
            throw std::runtime_error("unknown option " + key);
    }
    if (argc % 2 == 0)
        throw std::runtime_error("options come in pairs: --mbit 10 --trainers 4 --seconds 180 --modes gradients,delayed");
    return o;
}

// The bundled run with absolute paths, set up for `mode` (and `targetBatchSize` unless 0), signed
// by a throw-away lead key.
fs::path writeRun(const fs::path &dir, const std::string &mode, const Options &o)
{
    const auto bundled = findDefaultManifest();
    if (!bundled)
        throw std::runtime_error("the bundled default run was not found");
    RunManifest m = loadRunManifest(*bundled);
    m.tokenizer.path = m.resolve(m.tokenizer.path).string();
    for (auto &f : m.corpus.files)
        f.path = m.resolve(f.path).string();
    if (mode == "delayed" || mode == "delayed8bit")
        m.averagingField = AveragingSpec{true};
    if (mode == "gradients8bit" || mode == "delayed8bit")
        m.compression = Compression::Blockwise8Bit;
    if (o.targetBatchSize > 0)
        m.training.targetBatchSize = o.targetBatchSize;
    if (isLocal(mode)) {
        AveragingSpec a;
        a.mode = AveragingMode::LocalUpdates;
        a.innerBatchSize = o.innerBatchSize;
        a.outerLearningRate = o.outerLearningRate;
        a.outerMomentum = o.outerMomentum;
        m.averagingField = a;
        // The schedule counts steps: the same warm-up and decay in samples as the gradient modes'.
        const double ratio = static_cast<double>(m.training.targetBatchSize) / o.localTargetBatchSize;
        m.schedule.warmupSteps = std::max(1, static_cast<int>(std::lround(m.schedule.warmupSteps * ratio)));
        m.schedule.totalSteps = std::max(m.schedule.warmupSteps + 1,
                                         static_cast<int>(std::lround(m.schedule.totalSteps * ratio)));
        m.training.targetBatchSize = o.localTargetBatchSize;
        m.training.validationEveryNSteps = 1;
        const bool sparse = mode == "sparse" || mode == "overlappedsparse";
        if (mode != "local")
            m.compression = sparse ? Compression::TopK4Bit : Compression::Uniform8Bit;
        a.delayedParameterUpdates = mode == "overlapped" || mode == "overlappedsparse";
        m.averagingField = a;
    }
    fs::create_directories(dir);
    const auto path = dir / "manifest.json";
    writeFileAtomically(path, toJson(m) + "\n");
    const auto lead = minisign::generateKeyPair();
    writeFileAtomically(dir / "lead.pub", minisign::formatPublicKey(lead.publicKey));
    writeFileAtomically(path.string() + ".minisig", minisign::signFile(lead.secretKey, path, "bench run"));
    return path;
}

// Bytes sent by the interfaces of namespace `ns` other than loopback (/proc/net/dev there).
double sentBytes(const std::string &ns)
{
    QProcess p;
    p.start(QStringLiteral("ip"), {QStringLiteral("netns"), QStringLiteral("exec"), QString::fromStdString(ns),
                                   QStringLiteral("cat"), QStringLiteral("/proc/net/dev")});
    p.waitForFinished(10000);
    std::stringstream in(p.readAllStandardOutput().toStdString());
    double total = 0.0;
    for (std::string line; std::getline(in, line);) {
        const auto colon = line.find(':');
        if (colon == std::string::npos || line.find("lo:") != std::string::npos)
            continue;
        std::stringstream fields(line.substr(colon + 1));
        double v[9] = {};
        for (double &x : v)
            fields >> x;
        total += v[8]; // receive: 8 fields, then transmit bytes
    }
    return total;
}

struct ModeResult {
    long steps = 0, averaged = 0;
    double medianRound = 0, samplesPerSecond = 0, utilisation = 0, bytesPerStep = 0, bytesPerSample = 0;
    double bytesPerSecond = 0; // per trainer, over the mode's whole run
    double lastValLoss = -1;
    long valAtSamples = 0;
};

// `seconds`: how long the trainers were asked to run.
ModeResult measure(const std::vector<SwarmPeerProcess *> &trainers, const std::vector<double> &sent, double seconds)
{
    ModeResult r;
    struct Step {
        long batch = 0;        // batch samples
        double time = 0;       // the latest trainer's report
        bool averaged = true;  // by every trainer that reported it
    };
    std::map<long, Step> steps;
    std::vector<double> rounds;
    double busy = 0, wall = 0, bytes = 0;
    long computed = 0, validatedAt = -1;
    for (std::size_t i = 0; i < trainers.size(); ++i) {
        bytes += sent[i];
        double previous = -1;
        for (const auto &e : trainers[i]->events()) {
            const long step = e.value("step", 0L);
            const double time = e.value("time", 0.0);
            auto &s = steps[step];
            s.batch = std::max(s.batch, e.value("batch_samples", 0L));
            s.time = std::max(s.time, time);
            s.averaged = s.averaged && e.value("averaged", false);
            rounds.push_back(e.value("round_s", 0.0));
            computed += e.value("samples", 0L);
            if (previous > 0 && e.contains("utilisation")) {
                busy += e.value("utilisation", 0.0) * (time - previous);
                wall += time - previous;
            }
            previous = time;
            if (e.contains("val_loss") && step > validatedAt) {
                r.lastValLoss = e.value("val_loss", -1.0);
                validatedAt = step;
            }
        }
    }
    r.steps = static_cast<long>(steps.size());
    for (const auto &[step, s] : steps) {
        r.averaged += s.averaged ? 1 : 0;
        r.valAtSamples += step <= validatedAt ? s.batch : 0;
    }
    if (!rounds.empty()) {
        std::nth_element(rounds.begin(), rounds.begin() + static_cast<long>(rounds.size() / 2), rounds.end());
        r.medianRound = rounds[rounds.size() / 2];
    }
    if (steps.size() >= 3) {
        long samples = 0;
        for (auto it = std::next(steps.begin()); it != steps.end(); ++it)
            samples += it->second.batch;
        r.samplesPerSecond = samples / (steps.rbegin()->second.time - steps.begin()->second.time);
    }
    r.utilisation = wall > 0 ? busy / wall : 0;
    r.bytesPerStep = r.steps > 0 ? bytes / static_cast<double>(trainers.size()) / static_cast<double>(r.steps) : 0;
    r.bytesPerSample = computed > 0 ? bytes / static_cast<double>(computed) : 0;
    r.bytesPerSecond = bytes / static_cast<double>(trainers.size()) / seconds;
    return r;
}

ModeResult runMode(const Options &o, const std::string &mode, const fs::path &work)
{
    const fs::path app = fs::path(DEDLOC_APP);
    const auto manifest = writeRun(work / mode, mode, o);
    EmulatedInternet net("dlbc" + std::to_string(::getpid() % 100000), 216);
    const int monitorHost = net.addPublicHost({100, 100});
    std::vector<int> hosts;
    for (int i = 0; i < o.trainers; ++i)
        hosts.push_back(net.addPublicHost({o.mbit, o.mbit}));
    SwarmHarness h(app, manifest, work / mode / "peers");
    std::map<QString, int> hostOf{{QStringLiteral("monitor"), monitorHost}};
    for (int i = 0; i < o.trainers; ++i)
        hostOf[QStringLiteral("trainer-%1").arg(i + 1)] = hosts[static_cast<std::size_t>(i)];
    h.setLauncher([&](const QString &name) {
        return QStringList{QStringLiteral("ip"), QStringLiteral("netns"), QStringLiteral("exec"),
                           QString::fromStdString(net.namespaceOf(hostOf.at(name)))};
    });
    const auto address = [&](const QString &name) { return QString::fromStdString(net.addressOf(hostOf.at(name))); };
    h.setBootstrapHost(address(QStringLiteral("monitor")));
    // The product's periods and timeouts, not the tests' (SwarmHarness::commonArguments).
    QStringList reference{QStringLiteral("--progress-period"), QStringLiteral("1"),
                          QStringLiteral("--matchmaking-time"), QStringLiteral("5"),
                          QStringLiteral("--sender-timeout"),   QStringLiteral("15"),
                          QStringLiteral("--reducer-timeout"),  QStringLiteral("30")};
    if (o.maxProgressPeriod > 0) // 1: the fixed period of earlier versions
        reference << QStringLiteral("--max-progress-period") << QString::number(o.maxProgressPeriod);
    auto &monitor = h.startMonitor(QStringList(reference) << QStringLiteral("--host") << address(QStringLiteral("monitor")));
    ::sleep(2);
    std::vector<SwarmPeerProcess *> trainers;
    std::vector<double> before;
    for (int i = 0; i < o.trainers; ++i) {
        const QString name = QStringLiteral("trainer-%1").arg(i + 1);
        before.push_back(sentBytes(net.namespaceOf(hostOf.at(name))));
        trainers.push_back(&h.startPeer(name, QStringList(reference)
                                                  << QStringLiteral("--host") << address(name) << QStringLiteral("--duration")
                                                  << QString::number(o.seconds) << QStringLiteral("--min-peers")
                                                  << QString::number(o.trainers)));
    }
    const bool done = SwarmHarness::waitFor(
        [&] {
            return bench::stopSignal() != 0
                   || std::none_of(trainers.begin(), trainers.end(), [](auto *t) { return t->running(); });
        },
        o.seconds + 300);
    if (!done || bench::stopSignal() != 0)
        throw std::runtime_error("the trainers did not finish (see " + (work / mode).string() + ")");
    std::vector<double> sent;
    for (int i = 0; i < o.trainers; ++i)
        sent.push_back(sentBytes(net.namespaceOf(hostOf.at(trainers[static_cast<std::size_t>(i)]->name))) - before[static_cast<std::size_t>(i)]);
    monitor.stopGracefully(10000);
    return measure(trainers, sent, o.seconds);
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    bench::installStopSignals();
    try {
        const Options o = parse(argc, argv);
        std::string why;
        if (!EmulatedInternet::available(&why))
            throw std::runtime_error("the emulated internet " + why);
        const fs::path work = fs::temp_directory_path() / ("bench_communication." + std::to_string(::getpid()));
        std::printf("%d trainers of the bundled run (target batch %s), links %.0f Mbit/s each way, %.0f s per mode "
                    "(work dir %s)\n",
                    o.trainers, o.targetBatchSize > 0 ? std::to_string(o.targetBatchSize).c_str() : "as bundled",
                    o.mbit, o.seconds, work.c_str());
        std::printf("%-16s %6s %9s %8s %10s %7s %13s %12s %10s %9s %s\n", "mode", "steps", "averaged", "round_s",
                    "samples/s", "util", "sent/step MB", "sent/sample", "sent kB/s", "val_loss", "(at samples)");
        for (const auto &mode : o.modes) {
            if (mode != "gradients" && mode != "delayed" && mode != "gradients8bit" && mode != "delayed8bit"
                && !isLocal(mode))
                throw std::runtime_error("unknown mode " + mode
                                         + " (gradients, delayed, gradients8bit, delayed8bit, local, local8bit, overlapped, sparse,"
                                           " overlappedsparse)");
            const auto r = runMode(o, mode, work);
            std::printf("%-16s %6ld %9ld %8.2f %10.1f %7.2f %13.2f %9.1f kB %10.1f %9.3f (%ld)\n", mode.c_str(),
                        r.steps, r.averaged, r.medianRound, r.samplesPerSecond, r.utilisation, r.bytesPerStep / 1e6,
                        r.bytesPerSample / 1e3, r.bytesPerSecond / 1e3, r.lastValLoss, r.valAtSamples);
            std::fflush(stdout);
        }
        if (qEnvironmentVariableIsEmpty("DEDLOC_KEEP_BENCH_DIR"))
            fs::remove_all(work);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_communication: %s\n", e.what());
        return bench::stopSignal() != 0 ? 128 + bench::stopSignal() : 1;
    }
}
