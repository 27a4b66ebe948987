#pragma once
// Scores of a single-label classifier: accuracy and macro-averaged F1 (the metrics of SIB-200,
// Adelani et al. 2024, and of sklearn.metrics.f1_score(average="macro")).
//
// Per label c, from the true and predicted labels of n examples:
//   tp = #{true c, predicted c}, fp = #{true not c, predicted c}, fn = #{true c, predicted not c}
//   precision = tp / (tp + fp), recall = tp / (tp + fn), each 0 when its denominator is 0
//   F1 = 2 tp / (2 tp + fp + fn)   (the harmonic mean of precision and recall; 0 when tp = 0)
// accuracy = #{true = predicted} / n
// macro-F1 = the mean of F1 over the labels that occur among the true OR the predicted labels.
// A label with no true and no predicted example is left out of the mean: it neither rewards nor
// penalises (sklearn's convention when `labels` is not given, with zero_division = 0 for the
// rest). A label that is predicted but never true (or true but never predicted) has tp = 0 and
// counts as F1 = 0.
//
// Torch-free; pure functions.
#include <span>
#include <vector>

namespace dedloc {

struct LabelScores {
    long support = 0;   // examples whose true label is this one
    long predicted = 0; // examples predicted as this one
    long truePositives = 0;
    double precision = 0.0;
    double recall = 0.0;
    double f1 = 0.0;
    bool counted = false; // support > 0 or predicted > 0: part of the macro mean
};

struct ClassificationScores {
    long examples = 0;
    double accuracy = 0.0;             // in [0, 1]; 0 for no examples
    double macroF1 = 0.0;              // in [0, 1]; 0 for no examples
    std::vector<LabelScores> perLabel; // by label id
};

// truth and predicted: label ids in [0, labelCount), the same length. Throws dedloc::Error if
// the lengths differ or an id is out of range.
[[nodiscard]] ClassificationScores scoreClassification(std::span<const int> truth, std::span<const int> predicted,
                                                       int labelCount);

} // namespace dedloc
