// `kvaudit eval` as a library (metrics in docs/metrics.md, output in
// docs/results-schema.md): options become a validated plan (model loaded, windows cut, every --kv
// checked, the run's fingerprint known; nothing has run), and a session runs the plan in one
// streaming pass, resuming from DIR/progress.jsonl, and writes DIR/results.json. The CLI main only
// parses flags, builds the plan, runs it and prints.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "endpoint/remote_configs.h"
#include "eval/config_groups.h"
#include "eval/reference_file.h"
#include "eval/report.h"
#include "eval/summary.h"
#include "job/job_options.h"
#include "job/job_run.h"
#include "run/kv_configs.h"
#include "run/model_runtime.h"
#include "run/run_clock.h"
#include "run/shard.h"

namespace kvaudit {

struct EvalOptions : JobOptions {
  EvalOptions() { out = "kvaudit-eval"; }
  // Deployed servers (docs/endpoints.md): --endpoint configurations after the --kv ones,
  // compared through their prompt logprobs; --baseline-endpoint replaces kv.baseline (then every
  // configuration must be an endpoint). At least one configuration in all.
  RemoteConfigOptions remote;
  // --reference FILE (eval/reference_file.h): the baseline's top k from `kvaudit reference`
  // instead of a baseline run or server (not with --baseline-endpoint).
  std::string reference;
  int top_logprobs = 0;  // top-k logprobs asked per position of an endpoint (>= 5); 0: by server (ConnectEvalEndpoints)
  bool per_doc = false;  // one document per window instead of one joined stream
  int ctx = 0;           // window length; 0 = the model's context, at most 4096
  int windows = 0;       // use K windows; 0 = all from first_window on
  int first_window = 0;  // the first of them: windows [first_window, first_window + K) of the data
  int score_from = 0;    // statistics use positions >= this in each window
  // Positions per forward pass of a window (llama.cpp's -ub), 1-512; 0 = 512, lowered to keep the
  // [ubatch, vocab] logits of many configurations under 1 GiB. Only engine=llama.cpp caches and
  // weights depend on it, as llama.cpp does (docs/architecture.md "Batch invariance").
  int ubatch = 0;
  std::string buckets;  // ascending upper edges of context buckets; "" = powers of two
  double kld_threshold = 0.01;
  int bootstrap = 1000;  // replicates for the KLD confidence intervals
  uint64_t bootstrap_seed = 1;
  int attn_samples = 32;  // query positions per window for the attention diagnosis; 0 = off
  std::string jsonl;      // also write one JSON line per scored position; "" = no
};

struct EvalPlan {
  // Loads the model and the data and checks every option before any compute but calibration.
  static Expected<EvalPlan> Make(EvalOptions options);
  // A plan over windows already cut at options.ctx (all the data's windows, before --first-window
  // and --windows select): for a caller holding token ids, not text (a model without a
  // tokenizer; the planted-sensitivity test). options.data only names the source in results;
  // token classes are reported when the model has a tokenizer.
  // The windows of options.data for a job over text (`job` names it in the error when the model
  // has no tokenizer): options.ctx resolved (0: the model's context, at most 4096), the text cut
  // as eval cuts it (joined, or --per-doc), every window of the data before any selection.
  static Expected<std::vector<std::vector<int32_t>>> CutWindows(const ModelRuntime& runtime, const std::string& job,
                                                                EvalOptions& options);
  static Expected<EvalPlan> FromWindows(EvalOptions options, ModelRuntime runtime,
                                        std::vector<std::vector<int32_t>> all_windows);
  // For a job that plans several evals over one loaded model (sensitivity, recommend): the model
  // with every weight, and CutWindows of `data` at *ctx (resolved in place).
  struct LoadedText {
    ModelRuntime runtime;
    std::vector<std::vector<int32_t>> windows;  // [n_windows][<= ctx]
  };
  static Expected<LoadedText> LoadText(const JobOptions& job, int* ctx, const std::string& job_name);
  // The same model and windows under other configurations, diagnosis samples and output
  // directory: a job that runs eval in stages (decide/sensitivity) plans each stage on one
  // loaded model. Every spec is validated before any compute; the fingerprint follows.
  Status Reconfigure(KvConfigOptions kv, int attn_samples, const std::string& out);
  // Another shard of the same windows (or none: the whole run), e.g. a staged job's shard that
  // resumes a merged stage wholly: the windows computed and the fingerprint follow.
  void Reshard(const ShardSpec& shard);

  EvalOptions options;
  RunClock clock;  // started when planning began: the run's wall time includes loading
  ModelRuntime runtime;
  const Tokenizer* tokenizer = nullptr;       // null: no token classes
  std::vector<std::vector<int32_t>> windows;  // [n_windows][<= ctx] token ids, the selected windows
  KvConfigs configs;
  RemoteConfigs remote;                                   // connected; empty without --endpoint/--baseline-endpoint
  std::shared_ptr<const ReferenceFile> reference;         // --reference, read and checked against the windows
  std::vector<const ReferenceWindow*> reference_windows;  // [windows] each selected window's in it
  EvalRunInfo info;                                       // the inputs half of results.json
  nlohmann::json fingerprint;  // what DIR/progress.jsonl must carry to be resumed (a shard's adds "shard")
  std::string model_hash;      // hex IdentifyModel (run/fingerprint.h), computed once: with weights it reads every byte
  int max_len = 0;             // longest window: the caches' size

 private:
  EvalPlan(EvalOptions o, ModelRuntime e, KvConfigs c)
      : options(std::move(o)), runtime(std::move(e)), configs(std::move(c)) {}
  nlohmann::json MakeFingerprint() const;
};

struct EvalSessionResult {
  EvalRunInfo info;
  std::vector<ConfigResult> configs;  // [n_configs] in --kv order
  std::string results_path;           // DIR/results.json, written (a shard: DIR/shard.json)
  nlohmann::json results;             // its content (a shard: null; results come from `kvaudit merge`)
  int shard_windows = 0;              // a shard run: the windows it owns (all recorded)
};

// Runs a plan: the windows recorded in DIR/progress.jsonl are read back, the others run (each
// appended to the journal as it finishes), then results.json (and --jsonl) are written.
class EvalSession {
 public:
  explicit EvalSession(EvalPlan& plan) : plan_(plan) {}
  Expected<EvalSessionResult> Run();

 private:
  // groups: more than one when the configurations run in groups (eval/config_groups.h); then
  // caches[1..] hold no storage and each group's caches are built per window.
  Status RunWindows(JobRun& job, const std::vector<KvCache*>& caches, std::vector<KvCache*> shadows,
                    const std::vector<ConfigGroup>& groups, std::vector<WindowRecord>* records);
  // The groups the in-process configurations run in: one (all at once) when their caches fit the
  // memory, or when a configuration runs beside something that needs all of them at once (the
  // attention diagnosis' shadows, an endpoint's rows).
  Expected<std::vector<ConfigGroup>> PlanGroups() const;
  int Chunk(size_t n_caches) const;  // positions per lockstep forward call
  size_t n_configs() const;          // in-process + endpoints
  EvalSummaryInputs SummaryInputs(const std::vector<std::unique_ptr<KvCache>>& caches) const;
  // [n_windows] tokens: a window's compute is linear in its length (docs/scale-out.md).
  std::vector<int64_t> WindowCosts() const;

  EvalPlan& plan_;
};

}  // namespace kvaudit
