// `kvaudit sensitivity` as a library (docs/decision.md "Sensitivity"): how much
// each cache part (a layer's K or V) of a model contributes to a candidate format's error. It is
// eval underneath, in two stages on one loaded model and one set of calibration windows:
//   proxy  one eval run of the all-quantized, K-only and V-only configurations with the attention
//          diagnosis on: the all-quantized reference end to end, and a proxy score per part
//          (decide/sensitivity/sensitivity_proxy.h) from the diagnosis, which shadows the baseline;
//   parts  one eval run, in lockstep with the baseline, of the one-at-a-time and leave-one-out
//          configurations of the parts measured end to end: all of them (--stage full), the top
//          AutoTopK by proxy (--stage auto), none (--stage proxy).
// Each stage is an ordinary resumable eval run in DIR/proxy and DIR/<stage> (its own results.json
// and progress.jsonl); DIR/progress.jsonl holds the sensitivity run's fingerprint, so a changed
// input is refused naming it before anything runs. DIR/results.json: docs/results-schema.md.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "decide/sensitivity/sensitivity_proxy.h"
#include "decide/sensitivity/sensitivity_specs.h"
#include "eval/session.h"
#include "job/job_options.h"
#include "run/shard_manifest.h"

namespace kvaudit {

inline constexpr int kSensitivitySchemaVersion = 1;

enum class SensitivityStage { kProxy, kFull, kAuto };
Expected<SensitivityStage> ParseStage(const std::string& name);  // "proxy", "full", "auto"
std::string StageName(SensitivityStage stage);

struct SensitivityOptions : JobOptions {
  SensitivityOptions() { out = "kvaudit-sensitivity"; }
  std::vector<std::string> formats;  // --formats values (ParseCandidates)
  std::string target;                // --target (decide/targets/measure_target.h); "": DefaultTarget of the candidates
  std::string stage = "auto";
  int ctx = 0, windows = 0, first_window = 0;  // as eval's
  int attn_samples = 32;                       // the proxy's diagnosis samples per window (eval --attn-samples)
  // With --shard I/N (JobOptions::shard; docs/scale-out.md "Staged jobs"): a round of this shard. The parts stage needs
  // the proxy stage of every window, so it runs in rounds: the first computes the shard's proxy
  // windows into out/proxy; `kvaudit merge` of the shards writes MERGED/proxy; the next round
  // (`--merged MERGED`) resumes that wholly, selects the parts and computes the shard's windows
  // of the parts stage into out/<stage>; a final unsharded run with --out MERGED writes results.
  std::string merged;  // --merged: where the shards' earlier rounds were merged ("" = none yet)
};

// The stage directories (relative to out) a shard round computes, from what `merged` holds:
// {"proxy"} before it is merged (more rounds unless --stage proxy); then {"auto"} or {"full"}
// (none with --stage proxy, or once that is merged too).
ShardRound SensitivityShardRound(const SensitivityOptions& o);

struct SensitivityPlan {
  // Loads the model and the data; checks every option and every spec of every candidate (all
  // parts, whatever the stage will select) before any compute.
  static Expected<SensitivityPlan> Make(SensitivityOptions options);
  // Over windows already cut at options.ctx (all the data's; --first-window and --windows select):
  // for token ids without a tokenizer (EvalPlan::FromWindows).
  static Expected<SensitivityPlan> FromWindows(SensitivityOptions options, ModelRuntime runtime,
                                               std::vector<std::vector<int32_t>> all_windows);

  SensitivityOptions options;
  SensitivityStage stage = SensitivityStage::kAuto;
  RunClock clock;
  std::vector<FormatCandidate> candidates;
  std::vector<CandidateSpecs> specs;  // [n_candidates]
  EvalPlan eval;                      // configured for the proxy stage
  nlohmann::json fingerprint;         // what DIR/progress.jsonl must carry

 private:
  explicit SensitivityPlan(EvalPlan e) : eval(std::move(e)) {}
};

// End-to-end numbers of one configuration: the eval summary (overall and per context bucket).
struct PartResult {
  CachePart part;
  double proxy = 0;                           // kProxyQuantity's score
  std::optional<ConfigResult> one_at_a_time;  // nullopt: not measured end to end
  std::optional<ConfigResult> leave_one_out;
};

struct CandidateResult {
  FormatCandidate candidate;
  ConfigResult all_quantized, k_only, v_only;  // the proxy stage's configurations, end to end
  std::vector<PartResult> parts;               // [n_parts] in AllParts order
  std::vector<ProxyAgreement> agreement;  // every ProxyQuantity against the one-at-a-time KLD, the chosen one first
};

struct SensitivityResult {
  EvalRunInfo eval;        // the calibration inputs (model, data, windows, ctx, buckets, threads)
  std::string model_hash;  // run/fingerprint HashModel, as eval's fingerprint has it
  std::string target;      // the --target it measured under (decide/targets/measure_target.h)
  SensitivityStage stage = SensitivityStage::kAuto;
  int top_k = 0;  // parts measured end to end per candidate
  int windows_resumed_proxy = 0, windows_resumed_parts = 0;
  std::string proxy_results, parts_results;  // the stages' eval results.json, relative to DIR ("": did not run)
  std::vector<CandidateResult> candidates;
  double wall_s = 0, peak_rss_mb = 0;
  std::string results_path;  // DIR/results.json, written (a shard: DIR/shard.json)
  nlohmann::json results;    // its content (a shard: null)
  // A shard round: the stages it computed (SensitivityShardStages), its windows of them, and
  // whether a later round has more to compute.
  ShardRound shard_round;
  int shard_windows = 0;
};

class SensitivitySession {
 public:
  explicit SensitivitySession(SensitivityPlan& plan) : plan_(plan) {}
  Expected<SensitivityResult> Run();

 private:
  Expected<SensitivityResult> RunShard();  // sensitivity_shard.cc
  // Both stages into root/proxy and root/<stage> (each resumes what its journal holds), the result
  // without results.json (Run writes it).
  Expected<SensitivityResult> Compute(const std::string& root);
  // The candidates' proxy-stage results and proxy scores ([n_candidates][n_parts]) into r.
  std::vector<std::vector<double>> TakeProxy(const EvalSessionResult& proxy, SensitivityResult* r) const;
  // The parts stage's configurations: per candidate, per picked part, one at a time then leave one out.
  std::vector<std::string> PartSpecs(const std::vector<std::vector<int>>& picked) const;
  Expected<EvalSessionResult> RunStage(const std::vector<std::string>& specs, int attn_samples, const std::string& dir);
  // The parts each candidate measures end to end, by this stage's rule, from the proxy scores.
  std::vector<std::vector<int>> SelectParts(const std::vector<std::vector<double>>& proxy, int* top_k) const;

  SensitivityPlan& plan_;
};

}  // namespace kvaudit
