// Records -> results of `kvaudit eval`: the one function that turns the finished windows into
// every configuration's statistics, called by the session (eval/session.h) and by `kvaudit merge`
// over the windows of all shards (scale/merge.h; docs/scale-out.md), so the two cannot drift.
// What it needs besides the records is what a plan knows (EvalSummaryInputs); a shard writes it
// into its manifest so merge needs neither the model nor the data.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "base/status.h"
#include "eval/fidelity_metrics.h"
#include "eval/report.h"
#include "eval/token_classes.h"

namespace kvaudit {

struct EvalSummaryInputs {
  EvalRunInfo info;                 // the inputs half of results.json (the run block is filled later)
  std::vector<ConfigResult> heads;  // [n_configs] spec, bytes_per_token, endpoint; summaries empty
  std::vector<TokenClass> classes;  // [vocab] of every id; empty: the model has no tokenizer
  int vocab_size = 0;
};

// How many attention cells each window record holds per configuration (0: diagnosis off).
size_t AttentionCells(const EvalRunInfo& info);

// records: every window of the run, ascending window order (sums are order-dependent).
std::vector<ConfigResult> SummarizeEval(const EvalSummaryInputs& in, const std::vector<WindowRecord>& records);

// The inputs as JSON (doubles round-trip exact) and back; a malformed object is BadInput.
nlohmann::json EvalSummaryInputsToJson(const EvalSummaryInputs& in);
Expected<EvalSummaryInputs> EvalSummaryInputsFromJson(const nlohmann::json& j);

}  // namespace kvaudit
