#include "decide/audit/served_search.h"

#include <algorithm>
#include <filesystem>

#include "decide/audit/served_configs.h"
#include "decide/audit/served_search_report.h"
#include "decide/gate/gate_inputs.h"
#include "decide/recommend/recommend_report.h"
#include "decide/sensitivity/job_target.h"
#include "decide/targets/kv_memory.h"
#include "decide/targets/spec_memory.h"
#include "endpoint/server_launch.h"
#include "eval/reference_job.h"
#include "eval/session.h"
#include "job/job_run.h"
#include "job/job_runtime.h"
#include "kv/formats/format_table.h"
#include "model/model.h"
#include "probe/instance.h"
#include "probe/session.h"
#include "run/provenance.h"
#include "run/run_dir.h"
#include "run/windows.h"

namespace kvaudit {
namespace {

using nlohmann::json;

bool Mentions(const std::vector<std::string>& words, const std::string& placeholder) {
  return std::any_of(words.begin(), words.end(),
                     [&](const std::string& w) { return w.find(placeholder) != std::string::npos; });
}

// The grid of --formats pairs as `k=A,v=B` specs (one_type: A = B only), K in --formats order.
Expected<std::vector<std::string>> GridSpecs(const RecommendOptions& o, bool one_type) {
  KV_ASSIGN_OR_RETURN(const std::vector<CacheConfig> uniform, CandidateConfigs(o.formats, o.target));
  std::vector<std::string> formats;  // [n_candidates] each candidate's one format
  for (const CacheConfig& c : uniform) {
    KV_ASSIGN_OR_RETURN(const auto kv, ServeValuesOf(c, "--formats"));
    formats.push_back(kv.first);
  }
  std::vector<std::string> specs;
  for (const std::string& k : formats) {
    for (const std::string& v : formats) {
      if (!one_type || k == v) specs.push_back("k=" + k + ",v=" + v);
    }
  }
  return specs;
}

// The candidates under the target with their bytes, in the search's order: ascending bytes, then
// the K format of more bytes first, then grid order.
Expected<std::vector<ServedCandidate>> Candidates(ServedSearchPlan& plan, const ModelConfig& cfg) {
  RecommendOptions& o = plan.options;
  KV_ASSIGN_OR_RETURN(const std::vector<CacheConfig> uniform, CandidateConfigs(o.formats, o.target));
  KV_ASSIGN_OR_RETURN(o.kv.kv, GridSpecs(o, plan.one_type));
  KV_ASSIGN_OR_RETURN(const Target* target, ApplyJobTarget(o.target, uniform, &o.kv));
  o.target = std::string(target->name);
  KV_ASSIGN_OR_RETURN(const std::vector<CacheConfig> parsed, ParseKvArguments(o.kv));  // [baseline, grid...]
  plan.baseline = parsed[0];
  KV_RETURN_IF_ERROR(ServeValuesOf(plan.baseline, o.kv.baseline_flag));
  std::vector<std::pair<uint64_t, ServedCandidate>> keyed;  // (K's uniform bytes, candidate)
  for (size_t i = 1; i < parsed.size(); ++i) {
    ServedCandidate c;
    c.config = parsed[i], c.spec = parsed[i].spec();
    KV_ASSIGN_OR_RETURN(std::tie(c.k, c.v), ServeValuesOf(c.config, "--formats"));
    KV_ASSIGN_OR_RETURN(const KvMemory m, SpecMemory(cfg, c.config, plan.target_ctx, nullptr));
    c.bytes_per_token = m.bytes_per_token;
    KvSettings k_only = c.config.defaults();
    k_only.v = k_only.k;
    KV_ASSIGN_OR_RETURN(const KvMemory k_bytes,
                        SpecMemory(cfg, CacheConfig::Uniform(k_only), plan.target_ctx, nullptr));
    c.state = c.bytes_per_token <= plan.budget_bytes_per_token ? "" : "over the budget";
    keyed.emplace_back(k_bytes.bytes_per_token, std::move(c));
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    if (a.second.bytes_per_token != b.second.bytes_per_token)
      return a.second.bytes_per_token < b.second.bytes_per_token;
    return a.first > b.first;
  });
  std::vector<ServedCandidate> out;
  for (auto& [k_bytes, c] : keyed) out.push_back(std::move(c));
  return out;
}

Status CheckServedOptions(const RecommendOptions& o, const AcceptancePolicy& policy) {
  if (policy.relative_to) {
    return BadInput("policy " + policy.name + " judges against " + policy.relative_to->spec() +
                    ", which --serve-cmd would need a server of its own for; hint: use an absolute policy "
                    "(strict, balanced), or `kvaudit audit --serve-cmd` with that configuration among --kv");
  }
  if (!o.kv.kv_calib.empty()) {
    return BadInput("--kv-calib calibrates kvaudit's own caches, not a server's; hint: drop it with --serve-cmd");
  }
  return Status::Ok();
}

// The windows and the probe lengths, checked on the model's config and tokenizer (no weights).
Status PlanText(ServedSearchPlan& plan, const ModelRuntime& runtime) {
  RecommendOptions& o = plan.options;
  const ModelConfig& cfg = runtime.model->config();
  EvalOptions cut;
  cut.data = o.data, cut.ctx = o.ctx;
  KV_ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> all, EvalPlan::CutWindows(runtime, "recommend", cut));
  o.ctx = cut.ctx;
  KV_RETURN_IF_ERROR(SelectWindows(std::move(all), o.first_window, o.windows));
  plan.target_ctx = plan.policy.target_context.value_or(o.ctx);
  if (plan.target_ctx > o.ctx) {
    return BadInput("the policy's target_context " + std::to_string(plan.target_ctx) +
                    " is longer than the windows (--ctx " + std::to_string(o.ctx) + "); hint: give --ctx " +
                    std::to_string(plan.target_ctx) + " or lower target_context");
  }
  plan.probe_lengths =
      o.probe_lengths.empty()
          ? DefaultProbeLengths(std::min(plan.target_ctx + kProbeAnswerReserve, cfg.max_ctx), kProbeAnswerReserve)
          : o.probe_lengths;
  return Status::Ok();
}

Status CheckBudgetFits(const ServedSearchPlan& plan) {
  for (const ServedCandidate& c : plan.candidates) {
    if (c.state.empty()) return Status::Ok();
  }
  const ServedCandidate& smallest = plan.candidates.front();
  return BadInput("--budget " + plan.budget.text + " allows " + std::to_string(plan.budget_bytes_per_token) +
                  " bytes per token at " + std::to_string(plan.target_ctx) + " tokens, below the smallest candidate (" +
                  smallest.spec + ": " + std::to_string(smallest.bytes_per_token) +
                  "); hint: raise --budget or add a smaller type to --formats");
}

}  // namespace

Expected<ServedSearchPlan> ServedSearchPlan::Make(RecommendOptions o) {
  ServedSearchPlan plan;
  KV_ASSIGN_OR_RETURN(plan.policy, LoadPolicy(o.policy));
  KV_RETURN_IF_ERROR(CheckServedOptions(o, plan.policy));
  if (o.budget.empty())
    return BadInput("recommend needs --budget; hint: e.g. --budget 1800 (bytes per token), 2.5GiB or 0.5xf16");
  KV_ASSIGN_OR_RETURN(plan.budget, ParseBudget(o.budget));
  if (!o.target.empty()) KV_RETURN_IF_ERROR(TargetNamed(o.target));
  KV_ASSIGN_OR_RETURN(plan.words, SplitServeCommand(o.serve_cmd, "--serve-cmd"));
  KV_RETURN_IF_ERROR(
      FillServeCommand(plan.words, {{"port", "1"}, {"k", "k"}, {"v", "v"}, {"name", "n"}}, "--serve-cmd"));
  plan.one_type = !Mentions(plan.words, "{v}");
  if (o.formats.empty()) o.formats = DefaultCandidateFormats(o.target);
  KV_ASSIGN_OR_RETURN(plan.probe_families, VerifyFamilies(plan.policy, o));
  if (o.ctx == 0 && plan.policy.target_context) o.ctx = *plan.policy.target_context;
  KV_ASSIGN_OR_RETURN(const ModelRuntime runtime, ModelRuntime::Load(o.model, o.threads, false));  // no weights
  const ModelConfig& cfg = runtime.model->config();
  plan.options = std::move(o);
  KV_RETURN_IF_ERROR(PlanText(plan, runtime));
  plan.f16_bytes_per_token = F16BytesPerTokenAt(cfg, plan.target_ctx);
  KV_ASSIGN_OR_RETURN(plan.budget_bytes_per_token, BudgetBytesPerToken(plan.budget, cfg, plan.target_ctx));
  KV_ASSIGN_OR_RETURN(plan.candidates, Candidates(plan, cfg));
  KV_RETURN_IF_ERROR(CheckBudgetFits(plan));
  return plan;
}

namespace {

// The template for `c` with {port} left for the user: the command that deploys it, pasteable into a
// shell.
std::string DeployCommand(const ServedSearchPlan& plan, const ServedCandidate& c) {
  const Expected<std::vector<std::string>> words =
      FillServeCommand(plan.words, {{"port", "{port}"}, {"k", c.k}, {"v", c.v}, {"name", c.spec}}, "--serve-cmd");
  std::string out;
  for (const std::string& w : words ? *words : plan.words) out += (out.empty() ? "" : " ") + ShellQuote(w);
  return out;
}

// The baseline server's answers on the eval windows, frozen once (eval/reference_job.h) at
// DIR/baseline.kvref: every candidate's eval reads them instead of asking the server again.
Expected<ReferenceSummary> FreezeBaseline(const ServedSearchPlan& plan, const LaunchedServer& baseline) {
  const RecommendOptions& o = plan.options;
  EvalOptions e = StageOptions<EvalOptions>(o, "eval");
  e.out = SubDir(o.out, "baseline.kvref");
  e.kv = {plan.baseline.spec(), {}, ""};
  e.remote.baseline_endpoint = baseline.url(), e.remote.baseline_name = plan.baseline.spec();
  e.ctx = o.ctx, e.windows = o.windows, e.first_window = o.first_window;
  return MakeReference(std::move(e));
}

// Where a candidate's eval and probes run: the eval against the frozen baseline, the probes against
// the baseline server (a probe's answer depends on the generation, which nothing freezes).
struct CandidateRun {
  JobOptions at;
  RemoteConfigOptions remote;  // the probes': the baseline server and the candidate's
  std::string reference;       // the eval's baseline
};

CandidateRun RunOptions(const ServedSearchPlan& plan, const std::string& baseline_url, const std::string& url,
                        const std::string& reference, const ServedCandidate& c) {
  CandidateRun run;
  run.at = plan.options;
  run.at.out = SubDir(plan.options.out, c.dir);
  run.at.kv = {plan.baseline.spec(), {}, ""};
  run.remote.baseline_endpoint = baseline_url, run.remote.baseline_name = plan.baseline.spec();
  run.remote.endpoints = {url}, run.remote.endpoint_names = {c.spec};
  run.reference = reference;
  return run;
}

// Eval on the windows and the policy's probes through `url`, then the gate's verdict.
Status MeasureThrough(const ServedSearchPlan& plan, const CandidateRun& run, ServedCandidate* c) {
  const RecommendOptions& o = plan.options;
  EvalOptions e = StageOptions<EvalOptions>(run.at, "eval");
  e.remote = run.remote, e.ctx = o.ctx, e.windows = o.windows, e.first_window = o.first_window;
  e.remote.baseline_endpoint.clear(), e.remote.baseline_name.clear(), e.reference = run.reference;
  e.attn_samples = 0;  // the diagnosis reads the baseline's cache rows, which a server does not give
  KV_ASSIGN_OR_RETURN(EvalPlan eval, EvalPlan::Make(std::move(e)));
  KV_ASSIGN_OR_RETURN(const EvalSessionResult done, EvalSession(eval).Run());
  c->endpoint = done.configs.at(0).endpoint;
  c->reported = ReadCacheReport(eval.remote.configs().at(0).backend->client());
  if (c->reported) c->reported_differs = Contradiction(*c->reported, c->config);
  std::vector<std::string> dirs = {SubDir(run.at.out, "eval")};
  if (!plan.probe_families.empty()) {
    ProbeOptions p = StageOptions<ProbeOptions>(run.at, "probe");
    p.kv = run.at.kv, p.remote = run.remote;
    p.families = plan.probe_families, p.lengths = plan.probe_lengths, p.n = o.probe_n, p.custom = o.custom;
    KV_ASSIGN_OR_RETURN(const ProbePlan probe, ProbePlan::Make(std::move(p)));
    KV_RETURN_IF_ERROR(ProbeSession(probe).Run());
    dirs.push_back(SubDir(run.at.out, "probe"));
  }
  KV_ASSIGN_OR_RETURN(const GateInputs inputs, LoadGateInputs(dirs));
  KV_ASSIGN_OR_RETURN(const GateReport gate, EvaluateGate(plan.policy, inputs));
  for (const ConfigVerdict& v : gate.configs) {
    if (v.config == c->spec) c->verdict = v;
  }
  if (!c->verdict) return Internal("the gate has no verdict for " + c->spec + " in " + run.at.out);
  return Status::Ok();
}

// One candidate: its server started, measured against the baseline's, stopped. A server that exits
// before it is ready, or is not ready in time, is the engine refusing that setting (llama.cpp
// without flash attention refuses a quantized V cache): the candidate is not deployable as
// launched, says why, and the search goes on.
Status Measure(const ServedSearchPlan& plan, const LaunchedServer& baseline, const std::string& logs,
               const std::string& reference, ServedCandidate* c) {
  const RunClock clock;
  KV_ASSIGN_OR_RETURN(std::unique_ptr<LaunchedServer> server,
                      SpawnServedConfig(plan.words, c->config, {c->k, c->v}, logs, plan.options.serve_timeout_s));
  if (const Status ready = server->WaitReady(); !ready) {
    c->state = "its server did not start: " + ready.error().message;
    c->wall_s = clock.Stop().wall_s;
    return Status::Ok();
  }
  c->dir = "candidates/" + LogName(c->spec);
  KV_RETURN_IF_ERROR(MeasureThrough(plan, RunOptions(plan, baseline.url(), server->url(), reference, *c), c));
  server->Stop();
  c->state = "measured", c->wall_s = clock.Stop().wall_s;
  return Status::Ok();
}

// Why `c` is not measured now, or "" when it is to be.
std::string Skipped(const ServedSearchPlan& plan, const ServedSearchResult& r, const ServedCandidate& c, int started) {
  if (r.recommended) {
    const ServedCandidate& passed = r.candidates[*r.recommended];
    const bool tie = passed.bytes_per_token == c.bytes_per_token;
    return "not needed: " + passed.spec + " passed with " + (tie ? "as many bytes" : "fewer bytes");
  }
  if (started >= plan.options.max_servers) return "--max-servers reached";
  const double limit = plan.options.search_time_s;
  if (limit > 0 && plan.clock.Stop().wall_s >= limit) return "--search-time reached";
  return "";
}

}  // namespace

Expected<ServedSearchResult> RunServedSearch(ServedSearchPlan& plan) {
  const RecommendOptions& o = plan.options;
  KV_ASSIGN_OR_RETURN(const StagedJobRun job, StagedJobRun::Prepare("recommend", o, plan.clock, o.threads));
  ServedSearchResult r;
  KV_ASSIGN_OR_RETURN(r.logs_dir, ServerLogDir(o.out));
  r.candidates = plan.candidates;
  std::unique_ptr<LaunchedServer> baseline;  // started for the first candidate measured, kept to the end
  int started = 0;
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    ServedCandidate& c = r.candidates[i];
    if (!c.state.empty()) continue;  // over the budget
    c.state = Skipped(plan, r, c, started);
    if (!c.state.empty()) continue;
    if (!baseline) {
      KV_ASSIGN_OR_RETURN(const auto kv, ServeValuesOf(plan.baseline, o.kv.baseline_flag));
      KV_ASSIGN_OR_RETURN(baseline, SpawnServedConfig(plan.words, plan.baseline, kv, r.logs_dir, o.serve_timeout_s));
      KV_RETURN_IF_ERROR(baseline->WaitReady());
      r.baseline_log = baseline->options().log_path;
      KV_ASSIGN_OR_RETURN(r.reference, FreezeBaseline(plan, *baseline));
    }
    ++started;
    KV_RETURN_IF_ERROR(Measure(plan, *baseline, r.logs_dir, r.reference->path, &c));
    if (c.verdict && c.verdict->pass) r.recommended = i;
  }
  baseline.reset();  // stopped
  if (r.recommended) r.deploy_command = DeployCommand(plan, r.candidates[*r.recommended]);
  const RunTotals totals = plan.clock.Stop();
  r.wall_s = totals.wall_s, r.peak_rss_mb = totals.peak_rss_mb;
  r.results = ServedSearchJson(r, plan);
  KV_ASSIGN_OR_RETURN(r.results_path, job.WriteResults(r.results));
  return r;
}

}  // namespace kvaudit
