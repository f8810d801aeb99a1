#include "decide/audit/audit.h"

#include <algorithm>

#include "decide/audit/audit_signatures.h"
#include "decide/audit/audit_report.h"
#include "decide/audit/served_configs.h"
#include "decide/search/budget.h"
#include "decide/targets/spec_memory.h"
#include "decide/gate/gate_inputs.h"
#include "decide/gate/junit.h"
#include "decide/gate/gate_markdown.h"
#include "decide/sensitivity/job_target.h"
#include "probe/instance.h"
#include "probe/session.h"
#include "job/job_run.h"
#include "run/run_dir.h"
#include "run/shard_manifest.h"

namespace kvaudit {
namespace {

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The workload's families, then any the policy requires that the workload lacks (with their
// default variants), then custom when --custom is given.
void SelectProbes(const Workload& w, const AcceptancePolicy& policy, const std::string& custom, ProbeOptions* p) {
  p->families = w.families, p->variants = w.variants;
  for (size_t i = 0; i < kNumProbeFamilies; ++i) {
    const auto f = static_cast<ProbeFamily>(i);
    const std::string name = FamilyName(f);
    if (!policy.Required(f) || Has(p->families, name) || f == ProbeFamily::kCustom) continue;
    p->families.push_back(name);
    for (const std::string& v : DefaultVariants(name)) p->variants.push_back(v);
  }
  if (!custom.empty()) p->families.push_back("custom");
}

ProbeOptions ProbeOptionsFor(const AuditOptions& o, const Workload& w, const AcceptancePolicy& policy,
                             const std::string& baseline, const std::vector<std::string>& configs,
                             const std::vector<int>& lengths) {
  ProbeOptions p = StageOptions<ProbeOptions>(o, "probe");
  p.kv = {baseline, configs, o.kv.kv_calib};
  p.remote = o.remote;
  SelectProbes(w, policy, o.custom, &p);
  p.lengths = lengths, p.n = o.probe_n, p.custom = o.custom;
  return p;
}

RecommendOptions RecommendOptionsFor(const AuditOptions& o, const std::vector<int>& lengths) {
  RecommendOptions r = StageOptions<RecommendOptions>(o, "recommend");
  r.budget = o.budget, r.formats = o.formats, r.policy = o.policy;
  r.kv = {o.kv.baseline, {}, o.kv.kv_calib}, r.custom = o.custom, r.ctx = o.ctx;
  // Calibration right after the audit's windows; the candidates verified on the audit's own.
  r.target = o.target;  // resolved by AuditTarget, the baseline already written under it
  r.first_window = o.first_window + o.windows, r.calib_windows = o.calib_windows;
  r.verify_first_window = o.first_window, r.windows = o.windows;
  r.stage = o.stage, r.probe_lengths = lengths, r.probe_n = o.probe_n;
  r.merged = o.merged.empty() ? "" : SubDir(o.merged, "recommend");
  return r;
}

// Decode speed at the stated depth, on the eval's loaded model and configurations; the tokens are
// the first window's, repeated as needed (speed does not depend on their values).
Status Bench(AuditPlan& plan, AuditResult* r) {
  const EvalPlan& e = *plan.eval;
  DecodeSpeedOptions b;
  const int timed = 1 + b.rounds * b.tokens;
  b.depth = plan.options.bench_depth > 0 ? plan.options.bench_depth : std::max(1, plan.target_ctx - timed);
  std::vector<int32_t> ids;
  while (static_cast<int>(ids.size()) < b.depth + timed) {
    ids.insert(ids.end(), e.windows[0].begin(), e.windows[0].end());
  }
  KV_ASSIGN_OR_RETURN(r->bench, MeasureDecodeSpeed(*e.runtime.model, *e.runtime.pool, e.configs, ids, b));
  r->bench_options = b;
  return Status::Ok();
}

bool Has(const ShardRound& round, const std::string& stage) { return Has(round.stages, stage); }

// The policy's verdicts over root/eval and root/probe for r->configs, and the cheapest
// configuration under test that passes.
Status Judge(const AuditPlan& plan, const std::string& root, AuditResult* r) {
  KV_ASSIGN_OR_RETURN(const GateInputs inputs, LoadGateInputs({SubDir(root, "eval"), SubDir(root, "probe")}));
  KV_ASSIGN_OR_RETURN(r->gate, EvaluateGate(plan.policy, inputs));
  // Without the policy's own target_context the gate judges every measured bucket, which here is
  // every bucket up to the audit's target (its --ctx): gate.xml and summary.md name that length,
  // as the verdict block does, rather than "the longest context measured".
  if (!r->gate.target_context) r->gate.target_context = plan.target_ctx;
  for (AuditConfig& c : r->configs) {
    for (const ConfigVerdict& v : r->gate.configs) {
      if (v.config == c.spec) c.verdict = v;
    }
  }
  for (size_t i = 0; i < r->configs.size(); ++i) {
    const std::optional<uint64_t> bytes = r->configs[i].bytes_per_token;
    const std::optional<uint64_t> best =
        r->cheapest_passing ? r->configs[*r->cheapest_passing].bytes_per_token : std::nullopt;
    const bool better = !r->cheapest_passing || (bytes && (!best || *bytes < *best));
    if (r->configs[i].verdict.pass && better) r->cheapest_passing = i;
  }
  return Status::Ok();
}

// The configurations under test: the in-process ones in --kv order, then the servers (--serve-cmd's
// in --kv order, or the --endpoint ones), with their bytes per token at the target context
// (kvaudit's accounting, decide/targets/spec_memory.h) where their configuration is known: the
// bytes their eval measured, or with sliding-window layers those layers holding only their window.
Status TakeConfigs(const EvalPlan& eval, const std::vector<CacheConfig>& served, const EvalSessionResult& done,
                   AuditResult* r) {
  const size_t local = eval.configs.n_configs();
  for (size_t i = 0; i < done.configs.size(); ++i) {
    const ConfigResult& c = done.configs[i];
    AuditConfig a;
    a.spec = c.spec, a.endpoint = c.endpoint;
    if (i < local) a.config = eval.configs.config(i + 1), a.bytes_per_token = c.bytes_per_token;
    if (i >= local && i - local < served.size()) a.config = served[i - local];
    if (a.config && (r->config.n_sliding_layers() > 0 || i >= local)) {
      KV_ASSIGN_OR_RETURN(const KvMemory m,
                          SpecMemory(r->config, *a.config, r->target_ctx, eval.configs.calibration().get()));
      a.bytes_per_token = m.bytes_per_token;
    }
    r->configs.push_back(std::move(a));
  }
  return Status::Ok();
}

// What the recommendation verifies besides its own choices: the engines' approximations of the
// cheapest configuration under test that passes (RunAudit; the audit's deploy choice).
RecommendOptions RecommendFor(const AuditPlan& plan, const AuditResult& r) {
  RecommendOptions ro = *plan.recommend;
  if (r.cheapest_passing && r.configs[*r.cheapest_passing].config)
    ro.also_approximate = {*r.configs[*r.cheapest_passing].config};
  return ro;
}

// A round of an audit shard (docs/scale-out.md "Staged jobs"): its eval windows and probe units
// until they are merged; with --budget, its recommendation's round (recommend.h), which from the
// verification on needs the verdicts over the merged eval and probes (its round 3 approximates
// the audit's cheapest passing configuration), so those are resumed from MERGED and judged first.
Expected<AuditResult> RunAuditShard(AuditPlan& plan, const StagedJobRun& job, AuditResult r) {
  const AuditOptions& o = plan.options;
  ShardRound round = AuditShardRound(o);
  KV_RETURN_IF_ERROR(job.WriteRound(round, false));
  const bool merged_stages = !Has(round, "eval") && !Has(round, "probe");
  if (Has(round, "eval")) {
    KV_ASSIGN_OR_RETURN(const EvalSessionResult eval, EvalSession(*plan.eval).Run());
    r.shard_windows = eval.shard_windows;
  } else if (plan.recommend) {  // merged: resumed wholly (nothing computed), for its configurations' bytes
    plan.eval->options.out = SubDir(o.merged, "eval"), plan.eval->options.restart = false;
    plan.eval->Reshard({});
    KV_ASSIGN_OR_RETURN(const EvalSessionResult eval, EvalSession(*plan.eval).Run());
    KV_RETURN_IF_ERROR(TakeConfigs(*plan.eval, plan.served, eval, &r));
  }
  plan.eval.reset();  // one loaded model at a time
  if (Has(round, "probe")) {
    KV_ASSIGN_OR_RETURN(const ProbePlan probe, ProbePlan::Make(plan.probe));
    KV_ASSIGN_OR_RETURN(const ProbeSessionResult done, ProbeSession(probe).Run());
    r.shard_probes = static_cast<int>(done.probes.size() + done.variance.size() + done.drift.size());
  }
  if (plan.recommend) {
    if (merged_stages) KV_RETURN_IF_ERROR(Judge(plan, o.merged, &r));
    KV_ASSIGN_OR_RETURN(RecommendPlan rp, RecommendPlan::Make(RecommendFor(plan, r)));
    KV_ASSIGN_OR_RETURN(const RecommendResult rec, RunRecommend(rp));
    r.shard_windows += rec.shard_windows, r.shard_probes += rec.shard_probes;
    std::vector<std::string> stages;  // this round's eval and probe, then what the recommendation computed
    for (const std::string& s : kAuditShardStages) {
      if (Has(round, s)) stages.push_back(s);
    }
    for (const std::string& s : rec.shard_round.Prefixed("recommend").stages) stages.push_back(s);
    round.stages = std::move(stages);
    round.more_rounds = rec.shard_round.more_rounds;
  }
  KV_ASSIGN_OR_RETURN(const RunTotals totals, job.WriteRound(round, true));
  r.wall_s = totals.wall_s, r.peak_rss_mb = totals.peak_rss_mb;
  r.shard_round = round;
  r.results_path = job.shard_path();
  return r;
}

// --target resolved (without it: DefaultTarget over the --kv configurations and, with --budget, the
// recommendation's candidates), and the configurations and the baseline rewritten as it runs
// them, so that eval, probes and the recommendation all measure that (decide/targets/measure_target.h).
Expected<const Target*> AuditTarget(AuditOptions* o) {
  std::vector<CacheConfig> candidates;
  if (!o->budget.empty()) {
    KV_ASSIGN_OR_RETURN(candidates, CandidateConfigs(o->formats, o->target, {.calib = !o->kv.kv_calib.empty()}));
  }
  return ApplyJobTarget(o->target, candidates, &o->kv);
}

// What an audit through servers cannot do: --bench and the recommendation measure this engine (the
// recommendation against the in-process baseline); a shard would start its own servers per round.
Status CheckRemoteAudit(const AuditOptions& o) {
  const bool servers = !o.remote.empty() || !o.serve_cmd.empty();
  if (servers && o.bench) {
    return BadInput(
        "--bench measures kvaudit's own engine, not a server; hint: drop --bench, or time the "
        "servers with their own tools (llama-bench, vLLM's benchmarks)");
  }
  const bool remote_baseline = !o.remote.baseline_endpoint.empty() || !o.serve_cmd.empty();
  if (remote_baseline && !o.budget.empty()) {
    return BadInput(
        "--budget searches per-layer mixes in process, against an in-process baseline, and this "
        "audit's baseline is a server; hint: drop --budget, or run `kvaudit recommend` on the model");
  }
  if (!o.serve_cmd.empty() && o.shard.on()) {
    return BadInput(
        "--serve-cmd with --shard is not supported: each shard would start its own servers; hint: "
        "start the servers once and give each shard --baseline-endpoint and --endpoint");
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> AuditDefaultConfigs(const std::string& target) {
  const Expected<const Target*> named = TargetNamed(target);  // an unknown name is refused by AuditTarget
  const std::string_view name = target.empty() || !named ? "" : (*named)->name;
  if (name == "ollama") return {"k=q8_0,v=q8_0", "k=q4_0,v=q4_0"};
  if (name == "vllm" || name == "sglang") return {"k=fp8_e4m3,v=fp8_e4m3", "k=fp8_e5m2,v=fp8_e5m2"};
  if (name == "transformers") return {"k=int4,v=int4,recent=1"};
  if (name == "tensorrt-llm") return {"k=f16,v=f16", "k=bf16,v=bf16"};
  return kDefaultAuditConfigs;
}

ShardRound AuditShardRound(const AuditOptions& o) {
  ShardRound round;
  for (const std::string& stage : kAuditShardStages) {  // eval and probe: round 1, all in one
    if (o.merged.empty() || !HasCompleteResults(SubDir(o.merged, stage))) round.stages.push_back(stage);
  }
  if (!o.budget.empty()) {
    RecommendOptions r;
    r.stage = o.stage, r.merged = o.merged.empty() ? "" : SubDir(o.merged, "recommend");
    const ShardRound rec = RecommendShardRound(r).Prefixed("recommend");
    round.stages.insert(round.stages.end(), rec.stages.begin(), rec.stages.end());
    round.more_rounds = rec.more_rounds;
  }
  return round;
}

Expected<AuditPlan> AuditPlan::Make(AuditOptions o) {
  const RunClock clock;
  KV_ASSIGN_OR_RETURN(Workload workload, WorkloadByName(o.workload));
  if (o.policy.empty()) o.policy = workload.policy;
  KV_ASSIGN_OR_RETURN(AcceptancePolicy policy, LoadPolicy(o.policy));
  if (!o.budget.empty()) KV_RETURN_IF_ERROR(ParseBudget(o.budget));
  if (o.kv.kv.empty() && o.remote.empty()) o.kv.kv = AuditDefaultConfigs(o.target);
  KV_RETURN_IF_ERROR(CheckRemoteAudit(o));
  const bool target_default = o.target.empty();
  KV_ASSIGN_OR_RETURN(const Target* target, AuditTarget(&o));
  o.target = std::string(target->name);
  if (policy.relative_to) o.kv.reference = AddReferenceConfig(*target, *policy.relative_to, &o.kv.kv);
  if (o.ctx == 0 && policy.target_context) o.ctx = *policy.target_context;
  std::vector<CacheConfig> served;
  KV_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<LaunchedServer>> servers, LaunchServedConfigs(&o, &served));

  EvalOptions e = StageOptions<EvalOptions>(o, "eval");
  e.remote = o.remote, e.reference = o.reference, e.top_logprobs = o.top_logprobs;
  e.ctx = o.ctx, e.windows = o.windows, e.first_window = o.first_window, e.attn_samples = o.attn_samples;
  KV_ASSIGN_OR_RETURN(EvalPlan eval, EvalPlan::Make(std::move(e)));
  o.ctx = eval.info.ctx;
  const int target_ctx = policy.target_context.value_or(o.ctx);
  if (target_ctx > o.ctx) {
    return BadInput("the policy's target_context " + std::to_string(target_ctx) +
                    " is longer than the windows (--ctx " + std::to_string(o.ctx) + "); hint: give --ctx " +
                    std::to_string(target_ctx) + " or lower target_context");
  }
  const ModelConfig& cfg = eval.runtime.model->config();
  const DecodeSpeedOptions bench;
  const int timed = 1 + bench.rounds * bench.tokens;  // decode steps after the depth
  if (o.bench && o.bench_depth + timed > cfg.max_ctx) {
    return BadInput("--bench-depth " + std::to_string(o.bench_depth) + " leaves no room for the " +
                    std::to_string(timed) + " timed decode steps in the model's context " +
                    std::to_string(cfg.max_ctx) + "; hint: use at most " + std::to_string(cfg.max_ctx - timed));
  }
  const std::vector<int> lengths =
      o.probe_lengths.empty()
          ? DefaultProbeLengths(std::min(target_ctx + kProbeAnswerReserve, cfg.max_ctx), kProbeAnswerReserve)
          : o.probe_lengths;
  AuditPlan plan;
  // The eval's baseline names a baseline server by its endpoint (the probes ask that server) and a
  // frozen one as "reference SPEC" (the probes run SPEC in process: the same baseline for gate).
  std::string baseline = o.remote.baseline_endpoint.empty() ? eval.info.baseline_spec : o.kv.baseline;
  if (!o.reference.empty()) baseline = baseline.substr(kReferenceBaselinePrefix.size());
  plan.probe = ProbeOptionsFor(o, workload, policy, baseline, eval.configs.config_specs(), lengths);
  // Checked now (the custom file, lengths, variants), planned again when the stage starts.
  KV_RETURN_IF_ERROR(ProbePlan::Make(plan.probe));
  if (!o.budget.empty()) {
    plan.recommend = RecommendOptionsFor(o, lengths);
    KV_RETURN_IF_ERROR(RecommendPlan::Make(*plan.recommend));
  }
  plan.options = std::move(o), plan.clock = clock, plan.workload = std::move(workload);
  plan.policy = std::move(policy), plan.target_ctx = target_ctx;
  plan.target = target, plan.target_default = target_default;
  plan.eval.emplace(std::move(eval));
  plan.servers = std::move(servers), plan.served = std::move(served);
  return plan;
}

Expected<AuditResult> RunAudit(AuditPlan& plan) {
  const AuditOptions& o = plan.options;
  KV_ASSIGN_OR_RETURN(const StagedJobRun job, StagedJobRun::Prepare("audit", o, plan.clock, plan.eval->info.threads));
  AuditResult r;
  r.workload = plan.workload, r.policy = plan.policy.name, r.target_ctx = plan.target_ctx;
  r.baseline = plan.eval->info.baseline_spec, r.probe_families = plan.probe.families;
  r.model_hash = plan.eval->model_hash;
  r.config = plan.eval->runtime.model->config();
  r.f16_bytes_per_token = F16BytesPerTokenAt(r.config, r.target_ctx);
  r.threads = plan.eval->info.threads;
  if (job.sharded()) return RunAuditShard(plan, job, std::move(r));
  {
    KV_ASSIGN_OR_RETURN(const EvalSessionResult eval, EvalSession(*plan.eval).Run());
    KV_RETURN_IF_ERROR(TakeConfigs(*plan.eval, plan.served, eval, &r));
    ReadServerReports(plan.eval->remote, &r.configs);
    r.threads = eval.info.threads;
    KV_ASSIGN_OR_RETURN(r.signatures, SignaturesOfConfigs(*plan.eval));
    if (o.bench) KV_RETURN_IF_ERROR(Bench(plan, &r));
    plan.eval.reset();  // one loaded model at a time
  }
  {
    KV_ASSIGN_OR_RETURN(const ProbePlan probe, ProbePlan::Make(plan.probe));
    KV_RETURN_IF_ERROR(ProbeSession(probe).Run());
  }
  plan.servers.clear();  // --serve-cmd's: measured
  KV_RETURN_IF_ERROR(Judge(plan, o.out, &r));
  if (plan.recommend) {
    // What to deploy of the configurations under test: its engines' approximations get verdicts too.
    KV_ASSIGN_OR_RETURN(RecommendPlan rp, RecommendPlan::Make(RecommendFor(plan, r)));
    r.recommend_plan = std::make_unique<RecommendPlan>(std::move(rp));
    KV_ASSIGN_OR_RETURN(r.recommend, RunRecommend(*r.recommend_plan));
  }
  KV_RETURN_IF_ERROR(WriteFileAtomically(SubDir(o.out, "gate.xml"), GateJunitXml(r.gate)));
  KV_RETURN_IF_ERROR(WriteFileAtomically(SubDir(o.out, "summary.md"), GateMarkdown(r.gate)));
  const RunTotals totals = plan.clock.Stop();
  r.wall_s = totals.wall_s, r.peak_rss_mb = totals.peak_rss_mb;
  KV_ASSIGN_OR_RETURN(r.results, AuditJson(r, plan));
  KV_ASSIGN_OR_RETURN(r.results_path, job.WriteResults(r.results));
  return r;
}

}  // namespace kvaudit
