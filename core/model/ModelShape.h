#pragma once
// The shape of the run's ALBERT (manifest "model", docs/MANIFEST.md; Lan et al. 2020,
// arXiv 1909.11942): what the model needs of the run manifest, and nothing else.
#include <string>

namespace dedloc {

struct ModelShape {
    std::string preset;          // "tiny" | "default" | "large" | "custom" (a label; the numbers rule)
    int vocabSize = 0;           // tokens, must equal the tokenizer's vocabulary
    int embeddingSize = 128;     // E of ALBERT's factorised embedding
    int hiddenSize = 0;          // H
    int numLayers = 0;           // L (applications of the one shared layer)
    int numHeads = 0;            // H % numHeads == 0
    int intermediateSize = 0;    // feed-forward width, usually 4H
    int maxPositions = 0;        // >= training.sequence_length
};

} // namespace dedloc
