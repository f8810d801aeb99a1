#include "eval/remote_fidelity.h"

#include <algorithm>
#include <optional>
#include <thread>

#include "endpoint/dialect.h"

namespace kvaudit {
namespace {

TopKRow ToRow(PromptPositionLogprobs&& p) {
  TopKRow r;
  r.token = p.token, r.logprob = p.logprob, r.top = std::move(p.top);
  return r;
}

Status CheckForEval(const RemoteConfig& c, int top_logprobs) {
  const Capabilities& caps = c.backend->capabilities();
  const std::string at = "--endpoint " + c.name + " (" + DialectName(c.backend->dialect()) + ")";
  if (!c.backend->has_forced_top_k()) {
    return BadInput(at +
                    " returns no prompt logprobs, which eval needs; hint: eval a vLLM, llama-server or kvaudit "
                    "serve deployment; `kvaudit probe` runs against this one (docs/endpoints.md)");
  }
  if (caps.max_top_logprobs > 0 && top_logprobs > caps.max_top_logprobs) {
    return BadInput("--top-logprobs " + std::to_string(top_logprobs) + " is above what " + at + " returns (" +
                    std::to_string(caps.max_top_logprobs) + "); hint: use at most " +
                    std::to_string(caps.max_top_logprobs) + ", or raise the server's limit (vLLM --max-logprobs)");
  }
  return Status::Ok();
}

}  // namespace

Expected<RemoteConfigs> ConnectEvalEndpoints(const RemoteConfigOptions& o, bool any_in_process_config,
                                             int* top_logprobs_flag, const Tokenizer& tokenizer,
                                             std::span<const std::string> samples) {
  int& top_logprobs = *top_logprobs_flag;
  if (o.empty()) return RemoteConfigs();
  if (!o.baseline_endpoint.empty() && any_in_process_config) {
    return BadInput(
        "--baseline-endpoint with an in-process --kv configuration: eval compares an in-process "
        "configuration only with an in-process baseline; hint: give the configurations as --endpoint, "
        "or drop --baseline-endpoint");
  }
  if (o.parallel > 1 && o.baseline_endpoint.empty()) {
    return BadInput("--parallel " + std::to_string(o.parallel) +
                    " needs --baseline-endpoint (an in-process baseline runs "
                    "one window at a time; the endpoints of a window are always asked at once); hint: drop --parallel");
  }
  if (top_logprobs != 0 && top_logprobs < kMinTopK) {
    return BadInput("--top-logprobs " + std::to_string(top_logprobs) + " is below " + std::to_string(kMinTopK) +
                    "; hint: top-5 drop needs 5 (the default is 20)");
  }
  KV_ASSIGN_OR_RETURN(RemoteConfigs remote, RemoteConfigs::Connect(o, tokenizer, samples));
  if (top_logprobs == 0) {
    const std::vector<const RemoteConfig*> all = remote.all();
    const bool uncapped = std::all_of(all.begin(), all.end(), [](const RemoteConfig* r) {
      const Capabilities& c = r->backend->capabilities();
      return c.prefix_logprobs == Support::kYes && c.max_top_logprobs < 0;
    });
    top_logprobs = uncapped ? kUncappedTopK : 20;
  }
  if (const RemoteConfig* b = remote.baseline()) KV_RETURN_IF_ERROR(CheckForEval(*b, top_logprobs));
  for (const RemoteConfig& c : remote.configs()) KV_RETURN_IF_ERROR(CheckForEval(c, top_logprobs));
  return remote;
}

Expected<std::vector<TopKRows>> FetchTopKRows(const std::vector<RemoteBackend*>& backends, std::span<const int32_t> ids,
                                              int k, size_t first) {
  std::vector<std::optional<Expected<std::vector<PromptPositionLogprobs>>>> got(backends.size());
  std::vector<std::thread> threads;
  for (size_t b = 0; b < backends.size(); ++b) {
    threads.emplace_back([&, b] { got[b].emplace(backends[b]->PromptLogprobs(ids, k, first)); });
  }
  for (std::thread& t : threads) t.join();
  std::vector<TopKRows> out(backends.size());
  for (size_t b = 0; b < backends.size(); ++b) {  // the first failing backend in order: a stable message
    if (!got[b]->ok()) return got[b]->error();
    std::vector<PromptPositionLogprobs>& rows = got[b]->value();
    KV_CHECK(rows.size() + 1 == ids.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      KV_CHECK(rows[i].token == ids[i + 1]);
      if (rows[i].top.empty() && i >= first) {
        return BadInput(
            backends[b]->client().spec().Url("/v1/completions") + ": position " + std::to_string(i + 1) +
            " came back without top logprobs; hint: the server must honour prompt_logprobs (vLLM, kvaudit serve)");
      }
      out[b].push_back(ToRow(std::move(rows[i])));
    }
  }
  return out;
}

namespace {

// One window's record from every side's rows: rows[0] the baseline, rows[1..] the configurations.
WindowRecord RecordOf(int window, const std::vector<int32_t>& ids, const std::vector<TopKRows>& rows, int score_from) {
  const int n = static_cast<int>(ids.size());
  const size_t n_cfg = rows.size() - 1;
  WindowRecord rec;
  rec.window = window;
  rec.first_pos = std::min(score_from, std::max(n - 1, 0));
  rec.configs.resize(n_cfg);
  for (int i = rec.first_pos; i < n - 1; ++i) {
    const TopKRow& base = rows[0][static_cast<size_t>(i)];
    rec.tokens.push_back(ids[static_cast<size_t>(i) + 1]);
    rec.nll_base.push_back(-base.logprob);
    for (size_t c = 0; c < n_cfg; ++c) {
      const PositionFidelity f = CompareTopK(base, rows[c + 1][static_cast<size_t>(i)]);
      WindowRecord::Config& out = rec.configs[c];
      out.kld.push_back(f.kld), out.nll.push_back(f.nll), out.dp.push_back(f.dp);
      out.top1.push_back(f.top1), out.top5_drop.push_back(f.top5_drop);
    }
  }
  return rec;
}

}  // namespace

Status RunTopKFidelity(const std::vector<RemoteBackend*>& backends, int k,
                       const std::vector<std::vector<int32_t>>& windows, const std::vector<bool>& skip, int score_from,
                       int parallel, const std::function<Status(WindowRecord&&)>& on_window,
                       const std::function<TopKRows(size_t window)>& reference_rows) {
  KV_CHECK(backends.size() >= (reference_rows ? 1u : 2u) && skip.size() == windows.size() && parallel >= 1);
  std::vector<size_t> todo;  // the windows to run, ascending
  for (size_t w = 0; w < windows.size(); ++w) {
    if (!skip[w]) todo.push_back(w);
  }
  for (size_t at = 0; at < todo.size(); at += static_cast<size_t>(parallel)) {
    // Up to `parallel` windows fetched at once; recorded in ascending order whichever answers first.
    const size_t batch = std::min(todo.size() - at, static_cast<size_t>(parallel));
    std::vector<std::optional<Expected<std::vector<TopKRows>>>> got(batch);
    std::vector<std::thread> threads;
    for (size_t b = 0; b < batch; ++b) {
      threads.emplace_back([&, b] {
        const size_t n = windows[todo[at + b]].size();
        const size_t first = std::min(static_cast<size_t>(std::max(score_from, 0)), n == 0 ? 0 : n - 1);
        got[b].emplace(FetchTopKRows(backends, windows[todo[at + b]], k, first));
      });
    }
    for (std::thread& t : threads) t.join();
    for (size_t b = 0; b < batch; ++b) {
      if (!got[b]->ok()) return got[b]->error();
      const size_t w = todo[at + b];
      if (reference_rows) got[b]->value().insert(got[b]->value().begin(), reference_rows(w));
      KV_RETURN_IF_ERROR(on_window(RecordOf(static_cast<int>(w), windows[w], got[b]->value(), score_from)));
    }
  }
  return Status::Ok();
}

}  // namespace kvaudit
