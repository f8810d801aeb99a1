#include "decide/sensitivity/sensitivity.h"

#include <algorithm>

#include "decide/sensitivity/job_target.h"
#include "decide/sensitivity/sensitivity_report.h"
#include "kv/config/cache_config.h"
#include "job/job_run.h"
#include "run/jsonl_journal.h"
#include "run/run_dir.h"

namespace kvaudit {
namespace {

// Stage 1 runs three configurations per candidate, in this order.
constexpr size_t kAllQuantized = 0, kKOnly = 1, kVOnly = 2, kProxyConfigs = 3;

// A generated configuration is checked against the model like a --kv, and its error names the candidate.
Status ValidateSpec(const CacheConfig& config, const FormatCandidate& c, const ModelConfig& cfg, bool have_calib) {
  const Status st = config.Validate(cfg, have_calib);
  if (!st.ok()) return BadInput("--formats " + c.name() + ": " + st.error().message);
  return Status::Ok();
}

Status ValidateAll(const CandidateSpecs& s, const FormatCandidate& c, const ModelConfig& cfg, bool have_calib) {
  for (const CacheConfig* config : {&s.all_quantized, &s.k_only, &s.v_only}) {
    KV_RETURN_IF_ERROR(ValidateSpec(*config, c, cfg, have_calib));
  }
  for (size_t i = 0; i < s.one_at_a_time.size(); ++i) {
    KV_RETURN_IF_ERROR(ValidateSpec(s.one_at_a_time[i], c, cfg, have_calib));
    KV_RETURN_IF_ERROR(ValidateSpec(s.leave_one_out[i], c, cfg, have_calib));
  }
  return Status::Ok();
}

// Every proxy quantity against the measured one-at-a-time KLDs, the chosen quantity first.
std::vector<ProxyAgreement> Agreement(const CandidateResult& c, int n_layers) {
  std::vector<std::optional<double>> e2e;  // [n_parts] one-at-a-time mean KLD where measured
  for (const PartResult& p : c.parts) {
    e2e.push_back(p.one_at_a_time ? std::optional<double>(p.one_at_a_time->summary.overall.kld_mean) : std::nullopt);
  }
  std::vector<ProxyAgreement> out;
  for (ProxyQuantity q : kAllProxyQuantities) {
    const ProxyAgreement a = MeasureProxy(ProxyScores(c.k_only, c.v_only, n_layers, q), e2e, q);
    q == kProxyQuantity ? (void)out.insert(out.begin(), a) : out.push_back(a);
  }
  return out;
}

}  // namespace

Expected<SensitivityStage> ParseStage(const std::string& name) {
  if (name == "proxy") return SensitivityStage::kProxy;
  if (name == "full") return SensitivityStage::kFull;
  if (name == "auto") return SensitivityStage::kAuto;
  return BadInput("--stage " + name + " is not a stage; hint: use --stage proxy, full or auto");
}

std::string StageName(SensitivityStage stage) {
  switch (stage) {
    case SensitivityStage::kProxy: return "proxy";
    case SensitivityStage::kFull: return "full";
    case SensitivityStage::kAuto: return "auto";
  }
  return "";
}

Expected<SensitivityPlan> SensitivityPlan::Make(SensitivityOptions o) {
  const RunClock clock;
  // The cheap checks first: a typo in --formats or --stage fails before the model loads.
  KV_RETURN_IF_ERROR(ParseCandidates(o.formats));
  if (!o.target.empty()) KV_RETURN_IF_ERROR(TargetNamed(o.target));
  KV_RETURN_IF_ERROR(ParseStage(o.stage));
  KV_ASSIGN_OR_RETURN(EvalPlan::LoadedText text, EvalPlan::LoadText(o, &o.ctx, "sensitivity"));
  KV_ASSIGN_OR_RETURN(SensitivityPlan plan,
                      FromWindows(std::move(o), std::move(text.runtime), std::move(text.windows)));
  plan.clock = clock;
  return plan;
}

Expected<SensitivityPlan> SensitivityPlan::FromWindows(SensitivityOptions o, ModelRuntime runtime,
                                                       std::vector<std::vector<int32_t>> all_windows) {
  const RunClock clock;
  KV_ASSIGN_OR_RETURN(std::vector<FormatCandidate> candidates, ParseCandidates(o.formats));
  KV_ASSIGN_OR_RETURN(const SensitivityStage stage, ParseStage(o.stage));
  if (o.attn_samples <= 0) {
    return BadInput("--attn-samples " + std::to_string(o.attn_samples) +
                    " leaves the proxy without its attention diagnosis; hint: use at least 1 (default 32)");
  }
  // The candidates' configurations are the baseline's settings with parts quantized: a baseline
  // under the target's engine puts every one of them under it.
  KV_ASSIGN_OR_RETURN(const std::vector<CacheConfig> as_configs, CandidateConfigs(o.formats, o.target));
  KV_ASSIGN_OR_RETURN(const Target* measured_as, ApplyJobTarget(o.target, as_configs, &o.kv));
  o.target = std::string(measured_as->name);
  const ModelConfig& cfg = runtime.model->config();
  const bool have_calib = !o.kv.kv_calib.empty();
  KV_ASSIGN_OR_RETURN(const CacheConfig baseline, CacheConfig::FromArgument(o.kv.baseline, "--baseline"));
  KV_RETURN_IF_ERROR(baseline.Validate(cfg, have_calib));
  std::vector<CandidateSpecs> specs;
  EvalOptions e = StageOptions<EvalOptions>(o, "proxy");
  e.ctx = o.ctx, e.windows = o.windows, e.first_window = o.first_window, e.attn_samples = o.attn_samples;
  e.kv = {baseline.spec(), {}, o.kv.kv_calib};
  for (const FormatCandidate& c : candidates) {
    KV_ASSIGN_OR_RETURN(CandidateSpecs s, MakeCandidateSpecs(baseline, c, cfg.n_layers));
    // Every part's specs, not only those the stage will select: nothing fails after compute began.
    KV_RETURN_IF_ERROR(ValidateAll(s, c, cfg, have_calib));
    for (const CacheConfig* config : {&s.all_quantized, &s.k_only, &s.v_only}) e.kv.kv.push_back(config->spec());
    specs.push_back(std::move(s));
  }
  KV_ASSIGN_OR_RETURN(EvalPlan eval, EvalPlan::FromWindows(std::move(e), std::move(runtime), std::move(all_windows)));

  SensitivityPlan plan(std::move(eval));
  plan.options = std::move(o), plan.stage = stage, plan.clock = clock;
  plan.candidates = std::move(candidates), plan.specs = std::move(specs);
  nlohmann::json names = nlohmann::json::array();
  for (const FormatCandidate& c : plan.candidates) names.push_back(c.name());
  const EvalRunInfo& info = plan.eval.info;
  // --windows is in it (unlike eval's): auto's selection depends on the proxy scores of all
  // windows, so more windows can select other parts. The stage is not: each stage's end-to-end
  // run has its own directory, so a proxy run can be followed by a full one in the same DIR.
  plan.fingerprint = {{"model", plan.eval.model_hash},
                      {"data", info.tokens_hash},
                      {"ctx", info.ctx},
                      {"first_window", info.first_window},
                      {"windows", info.n_windows},
                      {"baseline", info.baseline_spec},
                      {"formats", names},
                      {"attn_samples", plan.options.attn_samples}};
  if (plan.eval.fingerprint.contains("calibration"))
    plan.fingerprint["calibration"] = plan.eval.fingerprint["calibration"];
  return plan;
}

std::vector<std::vector<int>> SensitivitySession::SelectParts(const std::vector<std::vector<double>>& proxy,
                                                              int* top_k) const {
  const int n_parts = 2 * plan_.eval.runtime.model->config().n_layers;
  *top_k = plan_.stage == SensitivityStage::kProxy  ? 0
           : plan_.stage == SensitivityStage::kFull ? n_parts
                                                    : AutoTopK(n_parts);
  std::vector<std::vector<int>> out;
  for (const std::vector<double>& scores : proxy) {
    std::vector<int> pick = TopParts(scores, *top_k);
    std::sort(pick.begin(), pick.end());  // configurations in part order
    out.push_back(std::move(pick));
  }
  return out;
}

std::vector<std::vector<double>> SensitivitySession::TakeProxy(const EvalSessionResult& proxy,
                                                               SensitivityResult* r) const {
  const int n_layers = plan_.eval.runtime.model->config().n_layers;
  std::vector<std::vector<double>> scores;  // [n_candidates][n_parts] by kProxyQuantity
  for (size_t c = 0; c < plan_.candidates.size(); ++c) {
    const ConfigResult* at = &proxy.configs[kProxyConfigs * c];
    CandidateResult cr{plan_.candidates[c], at[kAllQuantized], at[kKOnly], at[kVOnly], {}, {}};
    scores.push_back(ProxyScores(cr.k_only, cr.v_only, n_layers, kProxyQuantity));
    for (const CachePart& p : AllParts(n_layers)) cr.parts.push_back({p, scores.back()[cr.parts.size()], {}, {}});
    r->candidates.push_back(std::move(cr));
  }
  return scores;
}

std::vector<std::string> SensitivitySession::PartSpecs(const std::vector<std::vector<int>>& picked) const {
  std::vector<std::string> out;  // [Σ picked × 2]
  for (size_t c = 0; c < picked.size(); ++c) {
    for (int i : picked[c]) {
      out.push_back(plan_.specs[c].one_at_a_time[i].spec());
      out.push_back(plan_.specs[c].leave_one_out[i].spec());
    }
  }
  return out;
}

Expected<EvalSessionResult> SensitivitySession::RunStage(const std::vector<std::string>& specs, int attn_samples,
                                                         const std::string& dir) {
  KV_RETURN_IF_ERROR(
      plan_.eval.Reconfigure({plan_.eval.info.baseline_spec, specs, plan_.options.kv.kv_calib}, attn_samples, dir));
  return EvalSession(plan_.eval).Run();
}

Expected<SensitivityResult> SensitivitySession::Run() {
  if (plan_.options.shard.on()) return RunShard();
  KV_ASSIGN_OR_RETURN(const StagedJobRun job,
                      StagedJobRun::Prepare("sensitivity", plan_.options, plan_.clock, plan_.eval.info.threads));
  std::vector<nlohmann::json> done;  // the journal holds only its header: the stages keep their own
  KV_ASSIGN_OR_RETURN(auto journal, JsonlJournal::Open(job.dir().journal_path(), "kvaudit_sensitivity_progress",
                                                       plan_.fingerprint, "sensitivity run", &done));
  KV_ASSIGN_OR_RETURN(SensitivityResult r, Compute(plan_.options.out));
  r.results = SensitivityJson(r);
  KV_ASSIGN_OR_RETURN(r.results_path, job.WriteResults(r.results));
  return r;
}

Expected<SensitivityResult> SensitivitySession::Compute(const std::string& root) {
  SensitivityResult r;
  r.stage = plan_.stage, r.model_hash = plan_.eval.model_hash, r.target = plan_.options.target;
  plan_.eval.options.out = SubDir(root, "proxy");
  KV_ASSIGN_OR_RETURN(EvalSessionResult proxy, EvalSession(plan_.eval).Run());  // planned for this stage
  r.eval = proxy.info, r.proxy_results = "proxy/results.json", r.windows_resumed_proxy = proxy.info.windows_resumed;
  const int n_layers = plan_.eval.runtime.model->config().n_layers;
  const std::vector<std::vector<double>> scores = TakeProxy(proxy, &r);  // [n_candidates][n_parts]
  const std::vector<std::vector<int>> picked = SelectParts(scores, &r.top_k);
  const std::vector<std::string> part_specs = PartSpecs(picked);
  if (!part_specs.empty()) {
    KV_ASSIGN_OR_RETURN(EvalSessionResult parts, RunStage(part_specs, 0, SubDir(root, StageName(plan_.stage))));
    r.parts_results = StageName(plan_.stage) + "/results.json", r.windows_resumed_parts = parts.info.windows_resumed;
    size_t next = 0;
    for (size_t c = 0; c < picked.size(); ++c) {
      for (int i : picked[c]) {
        r.candidates[c].parts[i].one_at_a_time = parts.configs[next++];
        r.candidates[c].parts[i].leave_one_out = parts.configs[next++];
      }
    }
  }
  for (CandidateResult& cr : r.candidates) cr.agreement = Agreement(cr, n_layers);
  const RunTotals totals = plan_.clock.Stop();
  r.wall_s = totals.wall_s, r.peak_rss_mb = totals.peak_rss_mb;
  return r;
}

}  // namespace kvaudit
