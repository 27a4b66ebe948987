#pragma once
// Fine-tuning the run's ALBERT encoder with a classification head on a labelled text set, the
// downstream evaluation of BERT-style pretraining (Devlin et al. 2019, arXiv 1810.04805,
// section 4 and appendix A.3; ALBERT: Lan et al. 2020, section 4.1).
//
// Input: [CLS] + the text's tokens + [SEP], the text's tokens cut so that the whole is at most
// maxTokens. A training batch holds sentences of similar length (a shuffled order sorted by
// length within windows of 8 batches, the batches then shuffled) and is padded with [PAD] to its
// longest sequence; the encoder ignores the padding (AlbertMlmImpl::encode's attention mask).
// Head: the mean of the encoder's final states over the real tokens ([CLS] and [SEP] included),
// then Linear(H -> labels), no dropout. Not BERT's [CLS] pooler: our pretraining is masked-LM
// only (no next-sentence or sentence-order objective trains a pooler or the [CLS] state), so
// [CLS] carries no sentence summary, while a mean over the tokens uses every state the masked-LM
// objective trained. No dropout because the encoder is pretrained without it (ALBERT v2).
// Training: every parameter (encoder and head) with AdamW (Loshchilov & Hutter 2019, arXiv
// 1711.05101; torch::optim::AdamW: betas 0.9/0.999, eps 1e-6 as BERT), no weight decay on biases
// and LayerNorm, cross-entropy averaged over the batch, gradient norm clipped at maxGradNorm, the
// learning rate warmed up linearly over warmupFraction of the steps and then decayed linearly to
// 0 (train/Schedule.h), as in BERT's fine-tuning.
// Evaluation: no gradient, batches in file order, the prediction is the arg-max logit; dev is
// scored after the last epoch only (no model selection on it).
//
// Determinism: `seed` drives torch's generator (torch::manual_seed: the encoder's random
// initialisation and the head's N(0, 0.02) weights) and the batch order (a std::mt19937_64 and
// Fisher-Yates). The same inputs, options, build and thread count give the same numbers.
// Torch's global generator is re-seeded by this call.
//
// Cost: on the bundled default preset (H = 256, L = 4) and the bundled SIB-200 set (701 train
// sentences, 46 tokens on average with [CLS] and [SEP]), one epoch is ~26 CPU-seconds with 1
// torch thread and the rest of a run (loading, tokenizing, scoring dev and test) ~9: a run with
// the defaults (8 epochs, 352 steps) ~215 CPU-seconds, with 4 epochs ~115 (measured on the
// development machine's 2 cores, 1 torch thread, wall time = CPU time when the other core was
// busy). With 2 torch threads on cores that other processes also use, OpenMP's waiting threads
// made a run several times slower than with 1: give an evaluation 1 thread on a busy machine.
//
// Threads: runs on the calling thread with torch's intra-op pool (system/TorchRuntime.h sizes
// it). Errors: dedloc::Error for a tokenizer/shape mismatch, bad options, or pretrained tensors
// that miss a parameter or do not fit its shape.
// This header is torch-free (it names NamedTensor only through a pointer).
#include "eval/ClassificationMetrics.h"
#include "model/ModelShape.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

namespace dedloc {

struct LabelledTextSet;
struct NamedTensor;
class Tokenizer;

struct FineTuneOptions {
    int epochs = 8;              // passes over the train split
    int batchSize = 16;          // sentences per optimizer step (one batch per epoch may be smaller)
    double learningRate = 1e-4;  // AdamW peak rate
    double weightDecay = 0.01;   // decoupled; not on biases and LayerNorm
    double warmupFraction = 0.1; // of all steps, linear from 0 to the peak rate
    double maxGradNorm = 1.0;    // global L2 clip; <= 0 disables
    int maxTokens = 128;         // per sequence, [CLS] and [SEP] included; <= the model's positions
    int evalBatchSize = 64;      // sentences per forward pass when scoring
    std::uint64_t seed = 0;
    // Checked before every training batch: when set, the fine-tuning throws dedloc::Error
    // ("fine-tuning stopped"). Null: never stopped. Owned by the caller, read from this thread.
    const std::atomic<bool> *stop = nullptr;
};

struct FineTuneResult {
    std::optional<ClassificationScores> dev; // absent when the set has no dev split
    ClassificationScores test;
    long steps = 0;         // optimizer steps taken
    double trainLoss = 0.0; // mean cross-entropy (nats) over the last epoch's examples
    double seconds = 0.0;   // wall time of training and scoring
};

// Fine-tunes a fresh AlbertMlm of `shape` with a new head and scores it on dev and test.
// pretrained: tensors named as a checkpoint names the model's parameters, "param.<name>"
// (train/Checkpoint.h; other tensors, e.g. the optimizer's, are ignored), or null for the
// random initialisation (the control). The tokenizer's vocabulary must equal shape.vocabSize.
// fineTunedEncoder: if not null, receives the encoder's parameters after fine-tuning (CPU fp32,
// named as `pretrained`; the head is not among them), e.g. to start another fine-tuning there.
[[nodiscard]] FineTuneResult fineTuneClassifier(const ModelShape &shape, const std::vector<NamedTensor> *pretrained,
                                                const Tokenizer &tokenizer, const LabelledTextSet &data,
                                                const FineTuneOptions &options,
                                                std::vector<NamedTensor> *fineTunedEncoder = nullptr);

} // namespace dedloc
