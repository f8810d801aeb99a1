// `kvaudit reference` as a library: a baseline computed once over the windows of a text — in
// process (--baseline SPEC, default f32) or through a baseline server (--baseline-endpoint) — and
// stored as its top-k log-probabilities per scored position (eval/reference_file.h), for `eval
// --reference` to compare configurations against without recomputing it (docs/endpoints.md "A
// frozen reference").
#pragma once

#include <string>

#include "base/status.h"
#include "eval/session.h"

namespace kvaudit {

struct ReferenceSummary {
  std::string path;
  int windows = 0;
  int64_t positions = 0;  // scored positions stored
  int top_k = 0;
  uint64_t bytes = 0;    // the file's size
  std::string baseline;  // the spec, or the endpoint's name
};

// options: model, data, ctx, windows, first_window, per_doc, score_from, the baseline (kv.baseline
// or remote.baseline_endpoint; no --kv or --endpoint), top_logprobs (0: 100, or 20 for a server
// with a cap) and out (the file). BadInput for anything the user can fix.
Expected<ReferenceSummary> MakeReference(EvalOptions options);

}  // namespace kvaudit
