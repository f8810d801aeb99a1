// `kvaudit audit` as a library (docs/audit.md): the main job. For the cache
// configurations under test, in one resumable output directory:
//   eval/       fidelity by context length on the audit's windows (eval/session.h);
//   probe/      the workload's probe families (probe/session.h);
//   recommend/  with --budget: sensitivity on other windows, the search, and the candidates
//               verified on the audit's own windows and probes (decide/recommend/recommend.h);
// then the policy's verdict per configuration (decide/gate/gate.h) and DIR/results.json, DIR/gate.xml
// (JUnit) and DIR/summary.md. `kvaudit gate --results DIR` reads eval/ and probe/ and gives the
// same verdicts.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "decide/gate/cache_signature.h"
#include "decide/gate/gate.h"
#include "decide/recommend/recommend.h"
#include "decide/audit/workload.h"
#include "decide/targets/measure_target.h"
#include "endpoint/remote_configs.h"
#include "endpoint/server_launch.h"
#include "endpoint/server_report.h"
#include "eval/session.h"
#include "probe/plan.h"
#include "job/job_options.h"
#include "run/decode_speed.h"

namespace kvaudit {

inline constexpr int kAuditSchemaVersion = 1;

// The configurations an audit measures without --kv: llama.cpp's most deployed cache settings
// (-ctk/-ctv q8_0, q8_0 with q4_0 V, q4_0); under another --target, that engine's quantized
// caches (AuditDefaultConfigs).
inline const std::vector<std::string> kDefaultAuditConfigs = {"k=q8_0,v=q8_0", "k=q8_0,v=q4_0", "k=q4_0,v=q4_0"};
// kDefaultAuditConfigs, or under --target `target` ("" = none given) the quantized caches it has:
// ollama q8_0 and q4_0 (one type for K and V), vLLM and SGLang fp8 (unit scales, their default),
// transformers quanto int4 with its one-token residual, TensorRT-LLM its model dtypes (no KV-only
// fp8 route was found; docs/deployment.md).
std::vector<std::string> AuditDefaultConfigs(const std::string& target);

struct AuditOptions : JobOptions {
  AuditOptions() { out = "kvaudit-audit"; }
  std::string workload = "code";     // decide/audit/workload.h
  std::string target;                // --target (decide/targets/measure_target.h); "": DefaultTarget
  std::string policy;                // "": the workload's preset
  std::string budget;                // "": no recommendation search
  std::vector<std::string> formats;  // the recommendation's candidates (recommend --formats)
  std::string stage = "auto";
  std::string custom;                 // custom probes (probe --custom); "" = none
  int ctx = 0;                        // 0: the policy's target_context, else the model's, at most 4096
  int windows = 4, first_window = 0;  // the eval windows (and the recommendation's held-out set)
  int calib_windows = 0;  // the recommendation's calibration windows, right after them (0: recommend's default)
  int attn_samples = 16;  // the eval's attention diagnosis (per layer and KV head)
  std::vector<int> probe_lengths;  // empty: 512, 1024, 2048, 4096, capped at the target context
  int probe_n = 1;
  bool bench = false;   // also measure decode tokens/s per configuration (run/decode_speed.h)
  int bench_depth = 0;  // 0: the target context minus the timed steps
  // With --shard I/N (JobOptions::shard; docs/scale-out.md): only this shard's eval windows and probe units, into
  // out/eval and out/probe, and out/shard.json. `kvaudit merge` combines the shards' stages; the
  // same command without --shard and with --out MERGED then resumes them wholly and computes
  // what depends on all of them (the verdicts, the recommendation, --bench, the report).
  std::string merged;  // --merged: where earlier rounds of the shards were merged (with --budget: 2 rounds)
  // Deployed servers (docs/endpoints.md): --endpoint configurations after the --kv ones, judged
  // like them; --baseline-endpoint replaces the in-process baseline. Eval and probes run through
  // them; a recommendation (--budget) and --bench need the in-process baseline.
  RemoteConfigOptions remote;
  std::string reference;  // --reference: the eval's baseline from `kvaudit reference` (eval/session.h)
  int top_logprobs = 0;   // per endpoint position (EvalOptions::top_logprobs)
  // --serve-cmd: the baseline and every --kv configuration run by a server kvaudit starts from this
  // template (endpoint/server_launch.h), stopped when eval and probes are done; "" = in-process.
  std::string serve_cmd;
  double serve_timeout_s = 600;  // --serve-timeout: each server's wait to be ready
};

struct AuditConfig {
  // What it stores: known for in-process and --serve-cmd configurations, not for an --endpoint.
  std::optional<CacheConfig> config;
  std::string spec;                           // config->spec(), or the endpoint's name: what results name it
  std::optional<uint64_t> bytes_per_token;    // at the target context, when config is known
  nlohmann::json endpoint;                    // null in-process; else the server (RemoteConfig::Describe())
  std::optional<ServerCacheReport> reported;  // what the server says it runs (endpoint/server_report.h)
  std::string reported_differs;               // "" or one sentence: the report contradicts the configuration named
  ConfigVerdict verdict;
};

struct AuditResult {
  Workload workload;
  std::string policy;
  int target_ctx = 0;
  std::string baseline, model_hash;
  int threads = 0;
  uint64_t f16_bytes_per_token = 0;
  ModelConfig config;                // the model's, for the engine settings
  std::vector<AuditConfig> configs;  // in --kv order
  GateReport gate;
  // Among the configurations under test whose bytes are known; else the first --endpoint that passes.
  std::optional<size_t> cheapest_passing;
  std::optional<RecommendResult> recommend;
  std::unique_ptr<RecommendPlan> recommend_plan;  // what the recommendation's report reads
  std::vector<std::string> probe_families;
  // Each configuration's and the baseline's (decide/gate/cache_signature.h), for `gate --endpoint`.
  std::optional<CacheSignatures> signatures;
  std::vector<DecodeSpeed> bench;  // with --bench: the baseline, then the configurations
  DecodeSpeedOptions bench_options;
  double wall_s = 0, peak_rss_mb = 0;
  std::string results_path;  // DIR/results.json (a shard: DIR/shard.json)
  nlohmann::json results;    // (a shard: null)
  int shard_windows = 0,
      shard_probes = 0;    // a shard round: the windows (eval, sensitivity) and probe units it computed
  ShardRound shard_round;  // a shard round: its stages
};

// The stages a sharded audit splits in its first round; merge combines each into MERGED/<stage>.
inline const std::vector<std::string> kAuditShardStages = {"eval", "probe"};

// What a round of an audit shard computes, as far as `merged` tells before anything runs: eval and
// probe until they are merged; with --budget, the recommendation's sensitivity rounds (below
// "recommend"). The verification rounds after those are known only when the round runs.
ShardRound AuditShardRound(const AuditOptions& o);

class AuditPlan {
 public:
  // Everything checked before any compute: the workload, the policy, every --kv, the probe run
  // (families, lengths, the custom file) and, with --budget, the recommendation (budget, formats,
  // windows). The probe and recommendation plans are made again when their stage starts, so one
  // loaded model at a time computes.
  static Expected<AuditPlan> Make(AuditOptions options);

  AuditOptions options;
  RunClock clock;
  Workload workload;
  AcceptancePolicy policy;
  const Target* target = nullptr;  // what every configuration was measured as (options.kv holds them so)
  bool target_default = false;     // chosen by DefaultTarget, not --target
  int target_ctx = 0;
  std::optional<EvalPlan> eval;
  ProbeOptions probe;
  std::optional<RecommendOptions> recommend;
  // --serve-cmd: [n_configs + 1] the baseline's server, then each configuration's, in --kv order;
  // stopped when eval and probes are done (or when the plan goes, on any error).
  std::vector<std::unique_ptr<LaunchedServer>> servers;
  std::vector<CacheConfig> served;  // [servers - 1] what each configuration's server runs
};

Expected<AuditResult> RunAudit(AuditPlan& plan);

}  // namespace kvaudit
