// Trainer's checkpoints and shareable state (train/Trainer.h): the parameters (in local-update
// mode the outer step's anchor), the LAMB statistics, in local-update mode the outer momentum, and
// the error-feedback residual a peer hands in.
#include "train/Checkpoint.h"
#include "train/TrainerImpl.h"

namespace dedloc {

using trainer_detail::shapeJson;

namespace {

constexpr const char *OuterMomentumPrefix = "outer.momentum.";
constexpr const char *FeedbackResidualName = "feedback.residual";

} // namespace

void Trainer::saveCheckpoint(const std::filesystem::path &directory, std::span<const float> feedbackResidual)
{
    Checkpoint c;
    c.meta = {{"format", 1},
              {"run_id", d->manifest.runId},
              {"model", shapeJson(d->manifest.model)},
              {"step", step()},
              {"data_seed", d->data.seed()},
              {"data_pass", d->boundaryPosition.pass},
              {"data_index", d->boundaryPosition.index},
              {"masker_state", d->boundaryMaskerState},
              {"contribution", {{"samples", d->contribution.samples},
                                {"compute_seconds", d->contribution.computeSeconds},
                                {"steps_taken_part", d->contribution.stepsTakenPart}}}};
    const auto named = d->model->named_parameters();
    for (std::size_t i = 0; i < named.size(); ++i) // local updates: the anchor, the step's boundary
        c.tensors.push_back({checkpointParameterName(named[i].key()),
                             d->outer ? d->outer->anchor()[i] : named[i].value()});
    for (auto &s : d->optimizer->state())
        c.tensors.push_back({"optim." + s.name, s.tensor});
    if (d->outer) {
        c.meta["inner_steps"] = d->optimizer->stepCount();
        for (std::size_t i = 0; i < named.size(); ++i)
            c.tensors.push_back({OuterMomentumPrefix + std::to_string(i), d->outer->momentum()[i]});
    }
    if (!feedbackResidual.empty()) {
        if (static_cast<long long>(feedbackResidual.size()) != parameterCount())
            throw Error("an error-feedback residual of " + std::to_string(feedbackResidual.size())
                        + " elements for a model of " + std::to_string(parameterCount()) + " parameters");
        c.tensors.push_back({FeedbackResidualName,
                             torch::tensor(at::ArrayRef<float>(feedbackResidual.data(), feedbackResidual.size()))});
    }
    CheckpointStore(directory).save(c);
}

std::optional<long> Trainer::restoreCheckpoint(const std::filesystem::path &directory)
{
    const auto named = d->model->named_parameters();
    auto accept = [&](const Checkpoint &c) {
        if (c.meta.value("run_id", std::string()) != d->manifest.runId)
            throw Error("it belongs to run \"" + c.meta.value("run_id", std::string()) + "\", not \""
                        + d->manifest.runId + "\"");
        if (c.meta.value("model", nlohmann::json()) != shapeJson(d->manifest.model))
            throw Error("its model shape differs from the manifest's");
        std::size_t expected = named.size() * (d->outer ? 4 : 3);
        if (c.tensors.size() == expected + 1 && c.tensors.back().name == FeedbackResidualName) {
            if (c.tensors.back().tensor.numel() != parameterCount())
                throw Error("its error-feedback residual has " + std::to_string(c.tensors.back().tensor.numel())
                            + " elements, the model " + std::to_string(parameterCount()) + " parameters");
            ++expected;
        }
        if (c.tensors.size() != expected)
            throw Error("it holds " + std::to_string(c.tensors.size()) + " tensors, expected "
                        + std::to_string(expected) + (d->outer ? " (local-update mode)" : ""));
        for (std::size_t i = 0; i < named.size(); ++i) {
            const auto &t = c.tensors[i];
            if (t.name != checkpointParameterName(named[i].key()) || t.tensor.sizes() != named[i].value().sizes())
                throw Error("tensor " + t.name + " does not match parameter " + named[i].key());
            if (!d->outer)
                continue;
            const auto &m = c.tensors[3 * named.size() + i];
            if (m.name != OuterMomentumPrefix + std::to_string(i) || m.tensor.sizes() != named[i].value().sizes())
                throw Error("tensor " + m.name + " is not the outer momentum of parameter " + named[i].key());
        }
    };
    auto loaded = CheckpointStore(directory).loadNewestGood(accept);
    if (!loaded)
        return std::nullopt;
    const auto &meta = loaded->meta;
    try {
        torch::NoGradGuard noGrad;
        for (std::size_t i = 0; i < named.size(); ++i)
            named[i].value().copy_(loaded->tensors[i].tensor);
        std::vector<NamedTensor> optimState;
        for (std::size_t i = named.size(); i < 3 * named.size(); ++i) {
            auto t = loaded->tensors[i];
            t.name = t.name.substr(std::string("optim.").size());
            t.tensor = t.tensor.to(d->device);
            optimState.push_back(std::move(t));
        }
        const long epoch = meta.at("step").get<long>();
        d->optimizer->loadState(optimState, d->outer ? meta.at("inner_steps").get<long>() : epoch);
        if (d->outer) {
            std::vector<torch::Tensor> momentum;
            for (std::size_t i = 3 * named.size(); i < 4 * named.size(); ++i)
                momentum.push_back(loaded->tensors[i].tensor);
            d->outer->rebase(flatten(momentum));
            d->outerSteps = epoch;
        }
        d->boundaryPosition = {meta.at("data_pass").get<std::uint64_t>(), meta.at("data_index").get<std::uint64_t>()};
        d->boundaryMaskerState = meta.at("masker_state").get<std::string>();
        d->data.setPosition(d->boundaryPosition);
        d->masker.setState(d->boundaryMaskerState);
        const auto &contribution = meta.at("contribution");
        d->contribution.samples = contribution.at("samples").get<long long>();
        d->contribution.computeSeconds = contribution.at("compute_seconds").get<double>();
        d->contribution.stepsTakenPart = contribution.at("steps_taken_part").get<long>();
    } catch (const nlohmann::json::exception &e) {
        throw Error(std::string("checkpoint metadata is incomplete: ") + e.what());
    }
    d->restoredFeedbackResidual.clear();
    if (loaded->tensors.back().name == FeedbackResidualName) {
        const auto r = loaded->tensors.back().tensor.contiguous();
        d->restoredFeedbackResidual.assign(r.data_ptr<float>(), r.data_ptr<float>() + r.numel());
    }
    d->resetAccumulation();
    log::info("ckpt", "resumed at step " + std::to_string(step()) + " from " + directory.string());
    return step();
}

std::vector<float> Trainer::takeRestoredFeedbackResidual() { return std::exchange(d->restoredFeedbackResidual, {}); }

std::vector<float> Trainer::parametersFlat() const { return flatten(d->model->parameters()); }

std::vector<float> Trainer::sharedParametersFlat() const
{
    return d->outer ? d->outer->anchorFlat() : parametersFlat();
}

long long Trainer::stateElements() const { return (d->outer ? 2 : 3) * parameterCount(); }

std::vector<float> Trainer::stateFlat() const
{
    if (d->outer) { // the same on every member after an outer step, and constant until the next
        auto tensors = d->outer->anchor();
        for (const auto &m : d->outer->momentum())
            tensors.push_back(m);
        return flatten(tensors);
    }
    auto tensors = d->model->parameters();
    for (const auto &s : d->optimizer->state()) // exp_avg.0, exp_avg_sq.0, exp_avg.1, ...
        tensors.push_back(s.tensor);
    return flatten(tensors);
}

void Trainer::loadStateFlat(std::span<const float> state, long epoch)
{
    const auto p = static_cast<std::size_t>(parameterCount());
    const auto needed = static_cast<std::size_t>(stateElements());
    if (state.size() != needed)
        throw Error("state has " + std::to_string(state.size()) + " elements, this model needs "
                    + std::to_string(needed) + (d->outer ? " (local-update mode)" : ""));
    if (epoch < 0)
        throw Error("state epoch " + std::to_string(epoch) + " is negative");
    auto all = torch::from_blob(const_cast<float *>(state.data()), {static_cast<std::int64_t>(state.size())}, torch::kFloat);
    if (!torch::isfinite(all).all().item<bool>())
        throw Error("state holds non-finite values");
    torch::NoGradGuard noGrad;
    std::int64_t offset = 0;
    for (auto &param : d->model->parameters()) {
        const auto n = param.numel();
        param.copy_(all.slice(0, offset, offset + n).view(param.sizes()));
        offset += n;
    }
    if (d->outer) { // the inner LAMB statistics stay this peer's own
        d->outer->rebase(state.subspan(p));
        d->outerSteps = epoch;
        d->resetAccumulation();
        return;
    }
    auto optim = d->optimizer->state();
    for (auto &s : optim) {
        const auto n = s.tensor.numel();
        s.tensor = all.slice(0, offset, offset + n).view(s.tensor.sizes()).clone().to(d->device);
        offset += n;
    }
    d->optimizer->loadState(optim, epoch);
    d->resetAccumulation();
}

} // namespace dedloc
