// kvaudit eval: fidelity of each cache configuration against the baseline, by context length
// (the plan and session: eval/session.h; metrics docs/metrics.md; output docs/results-schema.md).
#include <CLI/CLI.hpp>

#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/endpoint_flags.h"
#include "cli/flags.h"
#include "eval/session.h"

namespace kvaudit::cli {
namespace {

struct EvalFlags {
  ModelFlags model;
  EvalOptions options;
  std::string shard;
  bool json = false;
};

Expected<EvalSessionResult> RunEval(EvalFlags& f) {
  EvalOptions& o = f.options;
  KV_RETURN_IF_ERROR(ParseShardFlag(f.shard, &o.shard));
  KV_RETURN_IF_ERROR(ResolveJobInputs(f.model, o.data, &o.model, &o.threads, &o.data));
  KV_ASSIGN_OR_RETURN(EvalPlan plan, EvalPlan::Make(f.options));
  return EvalSession(plan).Run();
}

}  // namespace

CommandRunner AddEvalCommand(CLI::App& app) {
  auto f = std::make_shared<EvalFlags>();
  EvalOptions& o = f->options;
  f->model.Add(app);
  AddKvCompareFlags(app, o.kv);
  AddEndpointFlags(app, o.remote);
  app.add_option("--reference", o.reference,
                 "the baseline from `kvaudit reference` instead of a baseline run or server (docs/endpoints.md)");
  app.add_option("--top-logprobs", o.top_logprobs,
                 "top logprobs asked per position of an endpoint (its KLD is a lower bound from them; >= 5; "
                 "default 100 when every endpoint is llama-server, whose n_probs has no cap, else 20)");
  AddDataFlag(app, o.data, "the text to evaluate");
  app.add_flag("--per-doc", o.per_doc, "one document per window (truncated to --ctx) instead of one joined stream");
  AddCtxFlag(app, o.ctx, "the window length (default: the model's context, at most 4096)");
  AddWindowFlags(app, o.windows, o.first_window);
  app.add_option("--score-from", o.score_from,
                 "statistics use only positions >= this in each window (llama.cpp: ctx/2)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--ubatch", o.ubatch,
                 "positions per forward pass of a window, as llama.cpp's -ub (default 512): engine=llama.cpp "
                 "computes a batch as llama.cpp does (tiled attention and tinyBLAS for many rows), so 1 scores as "
                 "a llama-server endpoint does, one token at a time")
      ->check(CLI::Range(1, 512));
  app.add_option("--buckets", o.buckets,
                 "ascending upper edges of context-length buckets, e.g. 16,64,256 (default powers of two)");
  app.add_option("--kld-threshold", o.kld_threshold, "KLD above which a context length counts as unsafe")
      ->capture_default_str();
  app.add_option("--bootstrap", o.bootstrap, "bootstrap replicates for the KLD confidence intervals")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  AddBootstrapSeedFlag(app, o.bootstrap_seed);
  AddOutFlags(app, o.out, o.restart, "windows");
  AddJsonlFlag(app, o.jsonl);
  AddAttnSamplesFlag(app, o.attn_samples, "per layer and KV head (0 = off)");
  AddShardFlag(app, f->shard);
  AddJsonFlag(app, f->json);
  return [f] {
    auto done = RunEval(*f);
    if (!done) return ReportError(done.error());
    if (f->options.shard.on()) {
      return PrintShardDone(f->options.shard, done->shard_windows, "windows", done->info.wall_s, done->results_path);
    }
    return PrintResults(ResultsTable(done->info, done->configs), done->results,
                        RunFooter({done->info.wall_s, done->info.peak_rss_mb}, done->info.windows_resumed,
                                  done->info.n_windows, "windows", done->results_path),
                        f->json);
  };
}

}  // namespace kvaudit::cli
