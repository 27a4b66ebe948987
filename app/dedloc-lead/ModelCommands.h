#pragma once
// `dedloc-lead evaluate` and `dedloc-lead export`: what a lead does with a checkpoint once the
// swarm has trained it. Argument parsing and wiring only: the work is eval/DownstreamEvaluation.h
// and eval/HuggingFaceExport.h; docs/LEAD_GUIDE.md section "Is the model any good?".
// Run in the dedloc-lead-model program (ModelMain.cpp), which `dedloc-lead` execs for them.
#include <QStringList>

namespace dedloc::lead {

// Fine-tunes a checkpoint (and, as the control, the random initialisation) on a labelled text
// set and prints accuracy and macro-F1 on its test split; --json FILE writes the full result.
// Returns 0, or 2 for bad input with the reason printed.
int evaluate(const QStringList &args);
// Writes a checkpoint in the Hugging Face layout. Returns 0, or 2 for bad input.
int exportModel(const QStringList &args);

} // namespace dedloc::lead
