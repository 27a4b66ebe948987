#include "eval/ClassificationMetrics.h"

#include "util/Error.h"

namespace dedloc {

namespace {

void checkIds(std::span<const int> ids, int labelCount, const char *what)
{
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= labelCount)
            throw Error(std::string(what) + " label id " + std::to_string(ids[i]) + " at example " + std::to_string(i) +
                        " is outside [0, " + std::to_string(labelCount) + ")");
}

double ratio(long numerator, long denominator)
{
    return denominator > 0 ? static_cast<double>(numerator) / static_cast<double>(denominator) : 0.0;
}

} // namespace

ClassificationScores scoreClassification(std::span<const int> truth, std::span<const int> predicted, int labelCount)
{
    if (truth.size() != predicted.size())
        throw Error("cannot score " + std::to_string(predicted.size()) + " predictions against " +
                    std::to_string(truth.size()) + " true labels");
    checkIds(truth, labelCount, "true");
    checkIds(predicted, labelCount, "predicted");
    ClassificationScores s;
    s.examples = static_cast<long>(truth.size());
    s.perLabel.resize(static_cast<std::size_t>(labelCount));
    long correct = 0;
    for (std::size_t i = 0; i < truth.size(); ++i) {
        ++s.perLabel[static_cast<std::size_t>(truth[i])].support;
        ++s.perLabel[static_cast<std::size_t>(predicted[i])].predicted;
        if (truth[i] == predicted[i]) {
            ++s.perLabel[static_cast<std::size_t>(truth[i])].truePositives;
            ++correct;
        }
    }
    s.accuracy = ratio(correct, s.examples);
    double f1Sum = 0.0;
    int counted = 0;
    for (auto &l : s.perLabel) {
        l.precision = ratio(l.truePositives, l.predicted);
        l.recall = ratio(l.truePositives, l.support);
        // 2tp / (2tp + fp + fn) with fp = predicted - tp and fn = support - tp.
        l.f1 = ratio(2 * l.truePositives, l.predicted + l.support);
        l.counted = l.support > 0 || l.predicted > 0;
        if (l.counted) {
            f1Sum += l.f1;
            ++counted;
        }
    }
    s.macroF1 = counted > 0 ? f1Sum / counted : 0.0;
    return s;
}

} // namespace dedloc
