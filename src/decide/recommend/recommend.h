// `kvaudit recommend` as a library (docs/decision.md "Recommend"): under a
// memory budget, the cheapest cache configuration that passes an acceptance policy at the target
// context, verified end to end on data the calibration did not see. Four stages, each an ordinary
// resumable run in its own directory under --out:
//   sensitivity/      the parts' costs on the calibration windows (decide/sensitivity/sensitivity.h);
//   search            the fronts of per-layer, first/last and uniform mixes (decide/search/mix_search.h);
//   verify-1/{eval,probe}  the points chosen near the budget, on the held-out windows and probes,
//                     judged by the policy (decide/gate/gate.h);
//   verify-2/...      only when nothing under the budget passed: points above it, for the cheapest
//                     configuration that does;
//   verify-3/...      what the engines that cannot store the recommendation (or the best uniform
//                     configuration) run instead: their approximations, so that each engine's
//                     settings come with a verdict (docs/decision.md "Recommend", step 7).
// DIR/results.json: docs/results-schema.md "`kvaudit recommend` results".
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "job/job_options.h"
#include "decide/search/budget.h"
#include "decide/gate/gate.h"
#include "decide/search/mix_search.h"
#include "decide/recommend/part_costs.h"
#include "decide/acceptance/policy.h"
#include "decide/sensitivity/sensitivity.h"
#include "decide/targets/target_settings.h"

namespace kvaudit {

inline constexpr int kRecommendSchemaVersion = 1;

// The calibration windows when --calib-windows is not given: enough for 4096 tokens, at least 2.
// The sensitivity measurements of docs/decision.md used 4 windows of 1024 tokens and found rankings
// on disjoint sets agreeing to Spearman 0.985-0.988; two windows keep a window-to-window spread.
int DefaultCalibWindows(int ctx);

struct RecommendOptions : JobOptions {
  RecommendOptions() { out = "kvaudit-recommend"; }
  std::string budget;                // --budget (decide/search/budget.h ParseBudget)
  std::vector<std::string> formats;  // --formats; empty: q8_0,q4_0
  std::string policy = "balanced";   // a preset or a TOML file
  std::string target;                // --target (decide/targets/measure_target.h); "": DefaultTarget of the candidates
  std::string custom;                // custom probes the verification runs ("" = none)
  int ctx = 0;                       // window length; 0: the policy's target_context, else as eval's
  // Calibration windows [first_window, first_window + calib_windows); 0: DefaultCalibWindows.
  int calib_windows = 0, first_window = 0;
  int windows = 4;                 // held-out windows, where the candidates are verified (eval's --windows)
  int verify_first_window = -1;    // their first; -1: right after the calibration windows
  std::string stage = "auto";      // sensitivity --stage
  int attn_samples = 32;           // the proxy's diagnosis samples
  int verify_points = 3;           // per-layer points verified under the budget
  std::vector<int> probe_lengths;  // empty: 512, 1024, 2048, 4096, capped at the target context
  int probe_n = 1;                 // probe instances per cell
  // Configurations whose engine approximations round 3 verifies too (audit: its deploy choice).
  std::vector<CacheConfig> also_approximate;
  // With --shard I/N (JobOptions::shard) and --merged MERGED (docs/scale-out.md "Staged jobs"): a round of the
  // sensitivity stage's shard (out/sensitivity, sensitivity.h), nothing after it: the search and the verification need
  // every part's measure, and run in the final unsharded run (--out MERGED).
  std::string merged;
  // --serve-cmd: the search over the engine's own settings through its servers instead
  // (decide/audit/served_search.h); "" = the per-layer search in process.
  std::string serve_cmd;
  double serve_timeout_s = 600;  // --serve-timeout: each server's wait to be ready
  int max_servers = 6;           // --max-servers: candidates measured at most
  double search_time_s = 0;      // --search-time: no candidate started after this many seconds (0: no limit)
};

// The probe families a verification runs: those the policy names in a table of their own (custom
// only with --custom). A checked family the policy judges only through [probes]'s default
// fail_on_significant is judged when present (kvaudit gate), but not run here: the run would
// double for families the policy does not ask about. BadInput: a required custom family without --custom.
Expected<std::vector<std::string>> VerifyFamilies(const AcceptancePolicy& policy, const RecommendOptions& o);

// The stages (relative to out) a recommend shard round computes while its sensitivity is not
// merged: the sensitivity's, below "sensitivity" (more rounds: the verification follows). Then the
// verification rounds, known only when the round runs (RunRecommend).
ShardRound RecommendShardRound(const RecommendOptions& o);

// A configuration the verification ran.
struct VerifiedPoint {
  CacheConfig config;
  std::string spec;              // config.spec(): what results name it
  std::vector<MixShape> shapes;  // the fronts it lies on (a uniform point is on all three); none in round 3
  uint64_t bytes_per_token = 0;  // kvaudit's accounting at the target context
  double predicted_kld = 0;      // the search's cost: Σ of its parts' one-at-a-time mean KLD (NaN in round 3)
  bool within_budget = false;
  int round = 1;                         // 1: under the budget; 2: above it; 3: an engine's approximation
  bool scales_dropped = false;           // round 3: a choice as it runs when the checkpoint's scales do not load
  std::optional<ConfigResult> held_out;  // eval on the held-out windows
  ConfigVerdict verdict;                 // the policy's, at the target context
};

struct RecommendResult {
  std::string policy;
  Budget budget;
  uint64_t budget_bytes_per_token = 0;
  int target_ctx = 0;
  uint64_t f16_bytes_per_token = 0, smallest_bytes_per_token = 0;
  SensitivityResult sensitivity;
  std::vector<std::vector<PartCost>> costs;  // [n_candidates][n_parts]
  std::vector<std::pair<MixShape, MixFront>> fronts;
  std::vector<VerifiedPoint> verified;  // round 1 then round 2, each by bytes descending
  int verify_first_window = 0, verify_windows = 0;
  std::vector<int> probe_lengths;
  std::vector<std::string> probe_families;
  std::vector<std::string> verify_dirs;  // per round run, relative to DIR
  // Indices into verified.
  std::optional<size_t> recommended;       // the fewest bytes under the budget that pass (any shape)
  std::optional<size_t> best_uniform;      // the same among uniform points; above the budget when none under it passes
  std::optional<size_t> cheapest_passing;  // when nothing under the budget passes: the fewest bytes that do
  double wall_s = 0, peak_rss_mb = 0;
  std::string results_path;  // (a shard: DIR/shard.json)
  nlohmann::json results;    // (a shard: null)
  ShardRound shard_round;    // a shard round: what it computed
  int shard_windows = 0, shard_probes = 0;
};

class RecommendPlan {
 public:
  // Every input checked before any compute: the policy, the budget (below the smallest
  // configuration the candidates can make: exit 2), the formats, the windows (calibration and
  // held-out must exist and be disjoint), the probe families the policy asks about.
  static Expected<RecommendPlan> Make(RecommendOptions options);
  // Over windows already cut at options.ctx (every window of the data; the options select the
  // calibration and held-out ones): token ids without a tokenizer (the planted-sensitivity test).
  // The verification then runs eval only, so the policy may name no probe family.
  static Expected<RecommendPlan> FromWindows(RecommendOptions options, ModelRuntime runtime,
                                             std::vector<std::vector<int32_t>> windows);

  RecommendOptions options;
  RunClock clock;  // started when planning began
  AcceptancePolicy policy;
  Budget budget;
  uint64_t budget_bytes_per_token = 0;
  int target_ctx = 0;
  SensitivityPlan sensitivity;
  std::vector<std::vector<int32_t>> all_windows;  // [n_windows][<= ctx] every window of the data
  std::vector<std::vector<uint64_t>> part_bytes;  // [n_candidates + 1][n_parts]: the baseline's, then each candidate's;
                                                  // 0 where it cannot store the part
  // The baseline's K and V as mix choices ("f16", "f16,engine=llama.cpp"): its first head's formats
  // under its attention mode, which every candidate shares (attention_suffix), from its spec parsed once.
  std::string baseline_choice[2];  // [K, V]
  // The engine of the --target the user named: the search keeps only what it runs exactly
  // (nullopt: no --target, or native; every shape kvaudit can measure).
  std::optional<DeployTarget> deploy_engine;
  std::string attention_suffix;
  std::vector<std::string> probe_families;
  std::vector<int> probe_lengths;

 private:
  explicit RecommendPlan(SensitivityPlan s) : sensitivity(std::move(s)) {}
};

// Runs the stages (each resumes from its own journal), picks the recommendation, writes
// DIR/results.json.
Expected<RecommendResult> RunRecommend(RecommendPlan& plan);

}  // namespace kvaudit
