// Eval through endpoints (docs/endpoints.md, docs/metrics.md "Fidelity through an endpoint"):
// each window's tokens are sent once to every remote configuration with vLLM's
// prompt_logprobs = k, and the rows that come back (the true token's logprob and the top k at each
// position) are compared with the baseline's by eval/topk_fidelity.h. With an in-process baseline
// the runner (eval/runner.h) compares them beside the in-process configurations; with a remote
// baseline every side is remote and RunTopKFidelity does the whole pass.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "base/status.h"
#include "endpoint/remote_backend.h"
#include "endpoint/remote_configs.h"
#include "eval/fidelity_metrics.h"
#include "eval/topk_fidelity.h"

namespace kvaudit {

// Connects eval's endpoints (endpoint/remote_configs.h) and checks what eval needs of them before
// any compute: a remote baseline only with remote configurations (an in-process configuration
// against top-k baseline rows is not built), prompt logprobs on every server, and top_logprobs
// within [kMinTopK, the server's documented maximum]; *top_logprobs 0 (not given) becomes
// kUncappedTopK when every server teacher-forces by prefixes with no cap on n_probs
// (llama-server: the bound's tightness, docs/metrics.md), else 20 (vLLM's default
// --max-logprobs). tokenizer_samples: texts of the windows.
inline constexpr int kUncappedTopK = 100;
Expected<RemoteConfigs> ConnectEvalEndpoints(const RemoteConfigOptions& options, bool any_in_process_config,
                                             int* top_logprobs, const Tokenizer& tokenizer,
                                             std::span<const std::string> tokenizer_samples);

using TopKRows = std::vector<TopKRow>;  // [n - 1]: row i predicts ids[i + 1] from ids[0..i]

// Every backend's rows for one window, fetched concurrently (one request per backend, or one per
// position from `first` on where the server has only prefix logprobs; the result does not depend
// on which answers first): [backends][n - 1], the rows before `first` possibly without top k.
Expected<std::vector<TopKRows>> FetchTopKRows(const std::vector<RemoteBackend*>& backends, std::span<const int32_t> ids,
                                              int k, size_t first = 0);

// backends[0] is the remote baseline, backends[1..] the configurations (at least one). Windows
// with skip[w] are not run; up to `parallel` windows are fetched at once; on_window receives each
// finished window in ascending order (when a window fails, those before it have been received).
// reference_rows: a frozen baseline (eval/reference_file.h) — reference_rows(w) is window w's
// [n - 1] rows and backends are the configurations only (at least one).
Status RunTopKFidelity(const std::vector<RemoteBackend*>& backends, int k,
                       const std::vector<std::vector<int32_t>>& windows, const std::vector<bool>& skip, int score_from,
                       int parallel, const std::function<Status(WindowRecord&&)>& on_window,
                       const std::function<TopKRows(size_t window)>& reference_rows = {});

}  // namespace kvaudit
