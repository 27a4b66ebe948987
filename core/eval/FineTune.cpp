#include "eval/FineTune.h"

#include "eval/LabelledText.h"
#include "model/Albert.h"
#include "model/Tokenizer.h"
#include "train/Checkpoint.h"
#include "train/Schedule.h"
#include "util/Error.h"

#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <span>

namespace dedloc {

namespace {

using Clock = std::chrono::steady_clock;
using TokenIds = std::vector<std::int64_t>;

// The encoder and a linear head on the mean of its real tokens' states (FineTune.h says why).
class SequenceClassifierImpl final : public torch::nn::Module {
  public:
    SequenceClassifierImpl(const ModelShape &shape, int labels)
    {
        encoder = register_module("encoder", AlbertMlm(shape));
        head = register_module("head", torch::nn::Linear(shape.hiddenSize, labels));
        torch::NoGradGuard noGrad;
        head->weight.normal_(0.0, 0.02); // BERT's initialisation of its task heads
        head->bias.zero_();
    }

    // ids, mask: [B, T] int64 (mask 1 at real tokens). Returns logits [B, labels].
    torch::Tensor forward(const torch::Tensor &ids, const torch::Tensor &mask)
    {
        const auto states = encoder->encode(ids, mask);                 // [B, T, H]
        const auto weights = mask.to(states.dtype()).unsqueeze(-1);     // [B, T, 1]
        const auto pooled = (states * weights).sum(1) / weights.sum(1); // every row has [CLS] and [SEP]
        return head->forward(pooled);
    }

    AlbertMlm encoder{nullptr};
    torch::nn::Linear head{nullptr};
};
TORCH_MODULE(SequenceClassifier);

void checkOptions(const ModelShape &shape, const Tokenizer &tokenizer, const LabelledTextSet &data,
                  const FineTuneOptions &o)
{
    if (tokenizer.vocabSize() != shape.vocabSize)
        throw Error("the tokenizer has " + std::to_string(tokenizer.vocabSize()) + " tokens, the model " +
                    std::to_string(shape.vocabSize));
    if (o.epochs < 1 || o.batchSize < 1 || o.evalBatchSize < 1)
        throw Error("fine-tuning needs epochs, batch size and evaluation batch size of at least 1");
    if (!(o.learningRate > 0.0) || o.weightDecay < 0.0 || !(o.warmupFraction >= 0.0 && o.warmupFraction <= 1.0))
        throw Error("fine-tuning needs a positive learning rate, a weight decay >= 0 and a warm-up fraction in [0, 1]");
    if (o.maxTokens < 3 || o.maxTokens > shape.maxPositions)
        throw Error("fine-tuning's max tokens " + std::to_string(o.maxTokens) + " is outside [3, " +
                    std::to_string(shape.maxPositions) + "] (the model's positions)");
    if (data.labels.empty() || data.train.empty() || data.test.empty())
        throw Error("fine-tuning needs labels, train and test examples");
}

void loadPretrained(AlbertMlmImpl &model, const std::vector<NamedTensor> &tensors)
{
    std::map<std::string, const torch::Tensor *> byName;
    for (const auto &t : tensors)
        byName[t.name] = &t.tensor;
    torch::NoGradGuard noGrad;
    for (auto &p : model.named_parameters()) {
        const auto name = checkpointParameterName(p.key());
        const auto it = byName.find(name);
        if (it == byName.end())
            throw Error("the checkpoint has no tensor " + name + " (the model's parameter " + p.key() + ")");
        if (it->second->sizes() != p.value().sizes())
            throw Error("checkpoint tensor " + name + " has shape " + c10::str(it->second->sizes()) +
                        ", the manifest's model needs " + c10::str(p.value().sizes()));
        p.value().copy_(*it->second);
    }
}

std::vector<TokenIds> tokenize(const Tokenizer &tokenizer, const std::vector<LabelledExample> &examples, int maxTokens)
{
    std::vector<TokenIds> out;
    out.reserve(examples.size());
    for (const auto &e : examples) {
        const auto pieces = tokenizer.encode(e.text);
        const auto kept = std::min<std::size_t>(pieces.size(), static_cast<std::size_t>(maxTokens - 2));
        TokenIds ids{SpecialTokens::Cls};
        ids.insert(ids.end(), pieces.begin(), pieces.begin() + static_cast<std::ptrdiff_t>(kept));
        ids.push_back(SpecialTokens::Sep);
        out.push_back(std::move(ids));
    }
    return out;
}

// The sequences at `rows`, padded with [PAD] to the longest: {ids, mask}, each [B, T] int64.
std::pair<torch::Tensor, torch::Tensor> padBatch(const std::vector<TokenIds> &sequences,
                                                 std::span<const std::size_t> rows)
{
    std::size_t longest = 0;
    for (const auto r : rows)
        longest = std::max(longest, sequences[r].size());
    const auto B = static_cast<std::int64_t>(rows.size()), T = static_cast<std::int64_t>(longest);
    auto ids = torch::full({B, T}, SpecialTokens::Pad, torch::kLong);
    auto mask = torch::zeros({B, T}, torch::kLong);
    auto idsAt = ids.accessor<std::int64_t, 2>();
    auto maskAt = mask.accessor<std::int64_t, 2>();
    for (std::int64_t b = 0; b < B; ++b) {
        const auto &s = sequences[rows[static_cast<std::size_t>(b)]];
        for (std::size_t t = 0; t < s.size(); ++t) {
            idsAt[b][static_cast<std::int64_t>(t)] = s[t];
            maskAt[b][static_cast<std::int64_t>(t)] = 1;
        }
    }
    return {ids, mask};
}

torch::Tensor labelTensor(const std::vector<LabelledExample> &examples, std::span<const std::size_t> rows)
{
    auto labels = torch::empty({static_cast<std::int64_t>(rows.size())}, torch::kLong);
    for (std::size_t i = 0; i < rows.size(); ++i)
        labels[static_cast<std::int64_t>(i)] = examples[rows[i]].label;
    return labels;
}

// Fisher-Yates with the generator's raw output (std::shuffle's draws differ between libraries).
void shuffle(std::vector<std::size_t> &order, std::mt19937_64 &rng)
{
    for (std::size_t i = order.size(); i > 1; --i)
        std::swap(order[i - 1], order[static_cast<std::size_t>(rng() % i)]);
}

// One epoch's batches (rows of `sequences`): a shuffled order cut into windows of 8 batches, each
// window sorted by length so that a batch holds sentences of similar length and pads little,
// then the batches shuffled (Hugging Face's group_by_length does the same; here ~40% less
// padding on SIB-200 than batches of random lengths).
std::vector<std::vector<std::size_t>> epochBatches(const std::vector<TokenIds> &sequences, std::size_t batchSize,
                                                   std::mt19937_64 &rng)
{
    std::vector<std::size_t> order(sequences.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    shuffle(order, rng);
    const std::size_t window = 8 * batchSize;
    for (std::size_t start = 0; start < order.size(); start += window) {
        const auto end = order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), start + window));
        std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(start), end,
                         [&](std::size_t a, std::size_t b) { return sequences[a].size() < sequences[b].size(); });
    }
    std::vector<std::vector<std::size_t>> batches;
    for (std::size_t start = 0; start < order.size(); start += batchSize)
        batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start),
                             order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), start + batchSize)));
    std::vector<std::size_t> batchOrder(batches.size());
    std::iota(batchOrder.begin(), batchOrder.end(), std::size_t{0});
    shuffle(batchOrder, rng);
    std::vector<std::vector<std::size_t>> out;
    for (const auto b : batchOrder)
        out.push_back(std::move(batches[b]));
    return out;
}

std::unique_ptr<torch::optim::AdamW> makeOptimizer(SequenceClassifierImpl &model, const FineTuneOptions &o)
{
    std::vector<torch::Tensor> decayed, plain;
    for (const auto &p : model.named_parameters())
        (p.key().find("norm") == std::string::npos && !p.key().ends_with("bias") ? decayed : plain)
            .push_back(p.value());
    auto options = [&](double decay) {
        return std::make_unique<torch::optim::AdamWOptions>(
            torch::optim::AdamWOptions(o.learningRate).betas({0.9, 0.999}).eps(1e-6).weight_decay(decay));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decayed, options(o.weightDecay));
    groups.emplace_back(plain, options(0.0));
    return std::make_unique<torch::optim::AdamW>(std::move(groups), *options(0.0));
}

void setLearningRate(torch::optim::AdamW &optimizer, double lr)
{
    for (auto &group : optimizer.param_groups())
        static_cast<torch::optim::AdamWOptions &>(group.options()).lr(lr);
}

struct TrainOutcome {
    long steps = 0;
    double lastEpochLoss = 0.0;
};

TrainOutcome trainClassifier(SequenceClassifierImpl &model, const std::vector<TokenIds> &sequences,
                             const std::vector<LabelledExample> &examples, const FineTuneOptions &o)
{
    const auto n = sequences.size();
    const auto batchSize = static_cast<std::size_t>(o.batchSize);
    const long stepsPerEpoch = static_cast<long>((n + batchSize - 1) / batchSize);
    const long totalSteps = stepsPerEpoch * o.epochs;
    const LinearWarmupDecay schedule{o.learningRate, std::lround(o.warmupFraction * static_cast<double>(totalSteps)),
                                     totalSteps};
    auto optimizer = makeOptimizer(model, o);
    std::mt19937_64 rng(o.seed);
    TrainOutcome out;
    model.train();
    for (int epoch = 0; epoch < o.epochs; ++epoch) {
        double lossSum = 0.0;
        for (const auto &batch : epochBatches(sequences, batchSize, rng)) {
            if (o.stop && o.stop->load())
                throw Error("fine-tuning stopped");
            const std::span<const std::size_t> rows(batch);
            const auto [ids, mask] = padBatch(sequences, rows);
            const auto loss =
                torch::nn::functional::cross_entropy(model.forward(ids, mask), labelTensor(examples, rows));
            optimizer->zero_grad();
            loss.backward();
            if (o.maxGradNorm > 0.0)
                torch::nn::utils::clip_grad_norm_(model.parameters(), o.maxGradNorm);
            setLearningRate(*optimizer, schedule.at(out.steps + 1));
            optimizer->step();
            ++out.steps;
            lossSum += loss.item<double>() * static_cast<double>(rows.size());
        }
        out.lastEpochLoss = lossSum / static_cast<double>(n);
    }
    return out;
}

ClassificationScores score(SequenceClassifierImpl &model, const std::vector<TokenIds> &sequences,
                           const std::vector<LabelledExample> &examples, int labelCount, int batchSize)
{
    torch::NoGradGuard noGrad;
    model.eval();
    std::vector<int> truth, predicted;
    std::vector<std::size_t> order(sequences.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    for (std::size_t start = 0; start < order.size(); start += static_cast<std::size_t>(batchSize)) {
        const std::span<const std::size_t> rows(order.data() + start,
                                                std::min(static_cast<std::size_t>(batchSize), order.size() - start));
        const auto [ids, mask] = padBatch(sequences, rows);
        const auto best = model.forward(ids, mask).argmax(-1);
        for (std::size_t i = 0; i < rows.size(); ++i) {
            predicted.push_back(static_cast<int>(best[static_cast<std::int64_t>(i)].item<std::int64_t>()));
            truth.push_back(examples[rows[i]].label);
        }
    }
    return scoreClassification(truth, predicted, labelCount);
}

} // namespace

FineTuneResult fineTuneClassifier(const ModelShape &shape, const std::vector<NamedTensor> *pretrained,
                                  const Tokenizer &tokenizer, const LabelledTextSet &data,
                                  const FineTuneOptions &options, std::vector<NamedTensor> *fineTunedEncoder)
{
    checkOptions(shape, tokenizer, data, options);
    const auto start = Clock::now();
    const int labels = static_cast<int>(data.labels.size());
    // Seeded before any parameter exists: the encoder's initialisation (kept by the control,
    // overwritten by a checkpoint) and then the head's, the same with and without a checkpoint.
    torch::manual_seed(options.seed);
    SequenceClassifier model(shape, labels);
    if (pretrained)
        loadPretrained(*model->encoder, *pretrained);

    const auto trainIds = tokenize(tokenizer, data.train, options.maxTokens);
    const auto testIds = tokenize(tokenizer, data.test, options.maxTokens);
    const auto trained = trainClassifier(*model, trainIds, data.train, options);

    FineTuneResult result;
    result.steps = trained.steps;
    result.trainLoss = trained.lastEpochLoss;
    result.test = score(*model, testIds, data.test, labels, options.evalBatchSize);
    if (!data.dev.empty())
        result.dev =
            score(*model, tokenize(tokenizer, data.dev, options.maxTokens), data.dev, labels, options.evalBatchSize);
    if (fineTunedEncoder) {
        fineTunedEncoder->clear();
        for (const auto &p : model->encoder->named_parameters())
            fineTunedEncoder->push_back({checkpointParameterName(p.key()), p.value().detach().to(torch::kCPU).clone()});
    }
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return result;
}

} // namespace dedloc
