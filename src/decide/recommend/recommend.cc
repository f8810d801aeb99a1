#include "decide/recommend/recommend.h"

#include <algorithm>

#include "decide/search/mix_spec.h"
#include "decide/targets/kv_memory.h"
#include "decide/recommend/recommend_report.h"
#include "decide/recommend/recommend_verify.h"
#include "decide/sensitivity/job_target.h"
#include "probe/custom.h"
#include "probe/instance.h"
#include "probe/plan.h"
#include "job/job_run.h"
#include "run/run_dir.h"

namespace kvaudit {
namespace {

// The candidate text of choice `c` of a part: 0 the baseline's format, c >= 1 the sensitivity
// run's candidate c - 1 (under the baseline's engine, which every spec of the run shares).
std::string ChoiceText(const RecommendPlan& plan, size_t c, KvTensor tensor) {
  if (c == 0) return plan.baseline_choice[tensor == KvTensor::kK ? 0 : 1];
  return plan.sensitivity.candidates[c - 1].name() + plan.attention_suffix;
}

void SetBaselineChoices(RecommendPlan& plan) {
  const CacheConfig& base = plan.sensitivity.eval.configs.config(0);
  const HeadConfig head = base.ForHead(0, 0);
  plan.attention_suffix = AttentionSuffix(base.attention());
  plan.baseline_choice[0] = std::string(KvFormatName(head.k)) + plan.attention_suffix;
  plan.baseline_choice[1] = std::string(KvFormatName(head.v)) + plan.attention_suffix;
}

// The bytes per token of every choice of every part at the target context; 0 where the choice
// cannot store the part (a K-only protection, e.g. outliers, on a V part).
Expected<std::vector<std::vector<uint64_t>>> AllPartBytes(const RecommendPlan& plan) {
  const ModelConfig& cfg = plan.sensitivity.eval.runtime.model->config();
  const KvCalibration* calib = plan.sensitivity.eval.configs.calibration().get();
  std::vector<std::vector<uint64_t>> out(plan.sensitivity.candidates.size() + 1);
  for (size_t c = 0; c < out.size(); ++c) {
    for (const CachePart& p : AllParts(cfg.n_layers)) {
      const char t = p.tensor == KvTensor::kK ? 'k' : 'v';
      auto cand = ParseCandidate(ChoiceText(plan, c, p.tensor), t);
      if (!cand) {
        out[c].push_back(0);
        continue;
      }
      KV_ASSIGN_OR_RETURN(const uint64_t bytes, PartBytesPerToken(cfg, *cand, p.layer, t, plan.target_ctx, calib));
      out[c].push_back(bytes);
    }
  }
  return out;
}

Status CheckWindows(const RecommendOptions& o, size_t n_windows) {
  const int calib_end = o.first_window + o.calib_windows;
  const int first = o.verify_first_window;
  if (o.calib_windows < 1) {
    return BadInput("--calib-windows " + std::to_string(o.calib_windows) +
                    " leaves nothing to calibrate on; hint: use at least 1 (default 4)");
  }
  if (o.windows < 1) {
    return BadInput("--windows " + std::to_string(o.windows) +
                    " leaves nothing held out; hint: use at least 1 (default 4)");
  }
  if (first < calib_end && first + o.windows > o.first_window) {
    return BadInput("held-out windows " + std::to_string(first) + ".." + std::to_string(first + o.windows - 1) +
                    " overlap the calibration windows " + std::to_string(o.first_window) + ".." +
                    std::to_string(calib_end - 1) + "; hint: the verification must see data the calibration did not");
  }
  if (static_cast<size_t>(first + o.windows) > n_windows) {
    return BadInput("the data has " + std::to_string(n_windows) + " windows of " + std::to_string(o.ctx) +
                    " tokens, too few for calibration windows " + std::to_string(o.first_window) + ".." +
                    std::to_string(calib_end - 1) + " and held-out windows " + std::to_string(first) + ".." +
                    std::to_string(first + o.windows - 1) +
                    "; hint: give more text (--data), a shorter --ctx, or fewer --calib-windows / --windows");
  }
  return Status::Ok();
}

// A budget no configuration of the candidates fits is the user's mistake, found before compute.
Status CheckBudgetReachable(const RecommendPlan& plan) {
  uint64_t smallest = 0;
  std::string k_min, v_min;
  const auto& bytes = plan.part_bytes;
  for (size_t i = 0; i < bytes[0].size(); ++i) {
    size_t best = 0;
    for (size_t c = 1; c < bytes.size(); ++c) {
      if (bytes[c][i] != 0 && bytes[c][i] < bytes[best][i]) best = c;
    }
    smallest += bytes[best][i];
    if (i < 2) (i == 0 ? k_min : v_min) = ChoiceText(plan, best, i == 0 ? KvTensor::kK : KvTensor::kV);
  }
  if (plan.budget_bytes_per_token >= smallest) return Status::Ok();
  return BadInput("--budget " + plan.budget.text + " allows " + std::to_string(plan.budget_bytes_per_token) +
                  " bytes per token at " + std::to_string(plan.target_ctx) +
                  " tokens, below the smallest configuration the candidates make (K " + k_min + ", V " + v_min +
                  " in every layer: " + std::to_string(smallest) +
                  " bytes per token); hint: raise --budget or add a smaller format to --formats (kvaudit formats)");
}

}  // namespace

Expected<std::vector<std::string>> VerifyFamilies(const AcceptancePolicy& policy, const RecommendOptions& o) {
  std::vector<std::string> out;
  for (size_t i = 0; i < kNumProbeFamilies; ++i) {
    const auto f = static_cast<ProbeFamily>(i);
    if (!policy.family(f) || (policy.CriteriaOf(f) == 0 && !policy.Required(f))) continue;
    if (f == ProbeFamily::kCustom && o.custom.empty()) {
      if (!policy.Required(f)) continue;
      return BadInput("policy " + policy.name + " requires the custom probe family; hint: give --custom FILE");
    }
    out.push_back(FamilyName(f));
  }
  if (!o.custom.empty() && std::find(out.begin(), out.end(), "custom") == out.end()) out.push_back("custom");
  return out;
}

int DefaultCalibWindows(int ctx) { return std::max(2, (4096 + ctx - 1) / std::max(ctx, 1)); }

namespace {

// The policy's relative_to reference, which every verification round adds, runs on this model:
// checked before the sensitivity run rather than in the first round.
Status CheckReference(const RecommendPlan& plan) {
  if (!plan.policy.relative_to) return Status::Ok();
  KV_ASSIGN_OR_RETURN(const Target* target, TargetNamed(plan.options.target));
  return WithTargetEngine(*target, *plan.policy.relative_to)
      .Validate(plan.sensitivity.eval.runtime.model->config(), !plan.options.kv.kv_calib.empty());
}

}  // namespace

Expected<RecommendPlan> RecommendPlan::Make(RecommendOptions o) {
  const RunClock clock;
  // The cheap checks first: a typo fails before the model loads.
  KV_ASSIGN_OR_RETURN(const AcceptancePolicy policy, LoadPolicy(o.policy));
  if (o.budget.empty())
    return BadInput("recommend needs --budget; hint: e.g. --budget 1800 (bytes per token), 2.5GiB or 0.5xf16");
  KV_RETURN_IF_ERROR(ParseBudget(o.budget));
  if (!o.target.empty()) KV_RETURN_IF_ERROR(TargetNamed(o.target));
  KV_RETURN_IF_ERROR(ParseCandidates(
      o.formats.empty() ? DefaultCandidateFormats(o.target, {.calib = !o.kv.kv_calib.empty()}) : o.formats));
  KV_RETURN_IF_ERROR(VerifyFamilies(policy, o));
  if (!o.custom.empty()) KV_RETURN_IF_ERROR(LoadCustomProbes(o.custom));
  if (o.ctx == 0 && policy.target_context) o.ctx = *policy.target_context;

  KV_ASSIGN_OR_RETURN(EvalPlan::LoadedText text, EvalPlan::LoadText(o, &o.ctx, "recommend"));
  KV_ASSIGN_OR_RETURN(RecommendPlan plan, FromWindows(std::move(o), std::move(text.runtime), std::move(text.windows)));
  plan.clock = clock, plan.sensitivity.clock = clock;
  return plan;
}

Expected<RecommendPlan> RecommendPlan::FromWindows(RecommendOptions o, ModelRuntime runtime,
                                                   std::vector<std::vector<int32_t>> windows) {
  const RunClock clock;
  KV_ASSIGN_OR_RETURN(AcceptancePolicy policy, LoadPolicy(o.policy));
  KV_ASSIGN_OR_RETURN(Budget budget, ParseBudget(o.budget));
  // The checkpoint's own k_scale/v_scale make scale=ckpt candidates beside scale=unit (what runs
  // when the engine's loader drops them): both judged.
  if (o.formats.empty()) {
    o.formats =
        DefaultCandidateFormats(o.target, ScaleSourcesOf(!o.kv.kv_calib.empty(), runtime.model->config().kv_scales));
  }
  // Every configuration recommend makes is the baseline's settings with parts quantized, so a
  // baseline under the target's engine puts the sensitivity and every verified point under it.
  KV_ASSIGN_OR_RETURN(const std::vector<CacheConfig> candidates, CandidateConfigs(o.formats, o.target));
  KV_ASSIGN_OR_RETURN(const Target* measured_as, ApplyJobTarget(o.target, candidates, &o.kv));
  // A target the user names is where the answer deploys: the search keeps what its engine runs.
  const std::optional<DeployTarget> deploy_engine = o.target.empty() ? std::nullopt : measured_as->engine;
  o.target = std::string(measured_as->name);
  KV_ASSIGN_OR_RETURN(std::vector<std::string> families, VerifyFamilies(policy, o));
  if (o.calib_windows == 0) o.calib_windows = DefaultCalibWindows(o.ctx);
  if (o.verify_first_window < 0) o.verify_first_window = o.first_window + o.calib_windows;
  KV_RETURN_IF_ERROR(CheckWindows(o, windows.size()));
  const int target = policy.target_context.value_or(o.ctx);
  if (target > o.ctx) {
    return BadInput("the policy's target_context " + std::to_string(target) + " is longer than the windows (--ctx " +
                    std::to_string(o.ctx) + "); hint: give --ctx " + std::to_string(target) +
                    " or lower target_context");
  }

  SensitivityOptions s = StageOptions<SensitivityOptions>(o, "sensitivity");
  s.formats = o.formats, s.target = o.target, s.stage = o.stage, s.ctx = o.ctx, s.windows = o.calib_windows;
  s.first_window = o.first_window, s.attn_samples = o.attn_samples;
  s.merged = o.merged.empty() ? "" : SubDir(o.merged, "sensitivity");
  KV_ASSIGN_OR_RETURN(SensitivityPlan sens, SensitivityPlan::FromWindows(std::move(s), std::move(runtime), windows));
  sens.clock = clock;

  RecommendPlan plan(std::move(sens));
  plan.clock = clock;
  plan.policy = std::move(policy), plan.budget = std::move(budget), plan.target_ctx = target;
  plan.deploy_engine = deploy_engine;
  plan.all_windows = std::move(windows), plan.probe_families = std::move(families);
  const ModelConfig& cfg = plan.sensitivity.eval.runtime.model->config();
  KV_ASSIGN_OR_RETURN(plan.budget_bytes_per_token, BudgetBytesPerToken(plan.budget, cfg, target));
  SetBaselineChoices(plan);
  KV_ASSIGN_OR_RETURN(plan.part_bytes, AllPartBytes(plan));
  plan.probe_lengths =
      o.probe_lengths.empty()
          ? DefaultProbeLengths(std::min(target + kProbeAnswerReserve, cfg.max_ctx), kProbeAnswerReserve)
          : o.probe_lengths;
  plan.options = std::move(o);
  KV_RETURN_IF_ERROR(CheckBudgetReachable(plan));
  KV_RETURN_IF_ERROR(CheckReference(plan));
  return plan;
}

MixProblem BuildMixProblem(const RecommendPlan& plan, const std::vector<std::vector<PartCost>>& costs) {
  const ModelConfig& config = plan.sensitivity.eval.runtime.model->config();
  const int n_layers = config.n_layers;
  std::vector<Part> parts;
  const std::vector<CachePart> all = AllParts(n_layers);
  for (size_t i = 0; i < all.size(); ++i) {
    Part part{all[i].layer, all[i].tensor == KvTensor::kK ? 'k' : 'v', {}, config.is_sliding(all[i].layer)};
    for (size_t c = 0; c < plan.part_bytes.size(); ++c) {
      if (plan.part_bytes[c][i] == 0) continue;  // this choice cannot store the part
      const double cost = c == 0 ? 0.0 : costs[c - 1][i].kld;
      part.choices.push_back({ChoiceText(plan, c, all[i].tensor), cost, plan.part_bytes[c][i]});
    }
    parts.push_back(std::move(part));
  }
  return MixProblem::FromPartsOrDie(std::move(parts));
}

namespace {

// The fewest bytes among the verified points `keep` accepts that pass; ties: the first.
template <class Keep>
std::optional<size_t> FewestBytesPassing(const std::vector<VerifiedPoint>& v, Keep keep) {
  std::optional<size_t> best;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].verdict.pass || !keep(v[i])) continue;
    if (!best || v[i].bytes_per_token < v[*best].bytes_per_token) best = i;
  }
  return best;
}

bool IsUniform(const VerifiedPoint& p) {
  return std::find(p.shapes.begin(), p.shapes.end(), MixShape::kUniform) != p.shapes.end();
}

// The choices among the points of rounds 1 and 2 (round 3 only adds verdicts for engines).
void Pick(RecommendResult* r) {
  const std::vector<VerifiedPoint>& v = r->verified;
  r->recommended = FewestBytesPassing(v, [](const VerifiedPoint& p) { return p.within_budget && p.round < 3; });
  r->best_uniform = FewestBytesPassing(v, [](const VerifiedPoint& p) { return p.within_budget && IsUniform(p); });
  if (!r->best_uniform) r->best_uniform = FewestBytesPassing(v, IsUniform);
  if (!r->recommended) r->cheapest_passing = FewestBytesPassing(v, [](const VerifiedPoint& p) { return p.round < 3; });
}

}  // namespace

ShardRound RecommendShardRound(const RecommendOptions& o) {
  SensitivityOptions s;
  s.stage = o.stage, s.merged = o.merged.empty() ? "" : SubDir(o.merged, "sensitivity");
  ShardRound round = SensitivityShardRound(s).Prefixed("sensitivity");
  round.more_rounds = !round.stages.empty();  // the verification follows the sensitivity
  return round;
}

namespace {

// The search over the sensitivity's costs, then the verification rounds (1, 2 when 1 found
// nothing under the budget that passes, 3: the engines' approximations of the choices), each
// through VerifyRound; with `shard`, it stops at the first round the shard computes a part of.
Status SearchAndVerify(RecommendPlan& plan, RecommendResult* r, VerifyShard* shard) {
  const RecommendOptions& o = plan.options;
  r->costs = PartCosts(r->sensitivity);
  const MixProblem problem = BuildMixProblem(plan, r->costs);
  r->fronts = SearchFronts(problem, plan.deploy_engine, &plan.sensitivity.eval.runtime.model->config());
  if (r->fronts.empty()) {
    std::string formats;
    for (const std::string& f : o.formats) formats += (formats.empty() ? "" : " ") + f;
    return BadInput("--target " + o.target + ": no mix of the candidates (" + formats + ")" +
                    " is a cache that engine runs as measured; hint: give --formats its cache types "
                    "(docs/deployment.md), or --target native to search kvaudit's own mixes");
  }
  r->smallest_bytes_per_token = r->fronts.front().second.front().bytes_per_token;
  for (const auto& [shape, front] : r->fronts)
    r->smallest_bytes_per_token = std::min(r->smallest_bytes_per_token, front.front().bytes_per_token);
  const std::optional<double> kld_max = plan.policy.LimitsFor(1, plan.target_ctx)[FidelityMetric::kKldMean];
  const CacheConfig& baseline = plan.sensitivity.eval.configs.config(0);
  for (int round = 1; round <= 2; ++round) {
    if (round == 2 && FewestBytesPassing(r->verified, [](const VerifiedPoint& p) { return p.within_budget; })) break;
    std::vector<VerifiedPoint> points =
        ChoosePoints(problem, r->fronts, r->budget_bytes_per_token, kld_max, o.verify_points, round, baseline);
    if (points.empty()) continue;
    std::string sub;
    KV_RETURN_IF_ERROR(VerifyRound(plan, &points, &sub, shard));
    if (shard && shard->stopped) return Status::Ok();
    r->verify_dirs.push_back(sub);
    for (VerifiedPoint& p : points) r->verified.push_back(std::move(p));
  }
  Pick(r);
  // Round 3: what the engines that cannot store the choices run instead, each with a verdict.
  std::vector<CacheConfig> chosen = o.also_approximate;
  for (const std::optional<size_t>& i : {r->recommended, r->cheapest_passing, r->best_uniform}) {
    if (i) chosen.push_back(r->verified[*i].config);
  }
  std::vector<VerifiedPoint> approx =
      TargetApproximations(chosen, r->verified, plan.sensitivity.eval.runtime.model->config(), r->target_ctx, baseline);
  if (!approx.empty()) {
    std::string sub;
    KV_RETURN_IF_ERROR(VerifyRound(plan, &approx, &sub, shard));
    if (shard && shard->stopped) return Status::Ok();
    r->verify_dirs.push_back(sub);
    for (VerifiedPoint& p : approx) r->verified.push_back(std::move(p));
  }
  return Status::Ok();
}

// A shard round: the sensitivity's round while it is not merged; then, from the merged
// sensitivity, the search and the first verification round not merged yet. DIR/shard.json names
// the stages it computed (relative to DIR).
Expected<RecommendResult> RunRecommendShard(RecommendPlan& plan, const StagedJobRun& job, RecommendResult r) {
  const RecommendOptions& o = plan.options;
  auto manifest = [&](const ShardRound& round, bool finished) -> Status {
    KV_RETURN_IF_ERROR(job.WriteRound(round, finished));
    return Status::Ok();
  };
  r.shard_round = RecommendShardRound(o);
  const bool sensitivity_round = !r.shard_round.stages.empty();
  if (sensitivity_round) KV_RETURN_IF_ERROR(manifest(r.shard_round, false));
  KV_ASSIGN_OR_RETURN(r.sensitivity, SensitivitySession(plan.sensitivity).Run());
  r.shard_windows = r.sensitivity.shard_windows;
  if (!sensitivity_round) {  // merged: resumed above; the verification rounds from it
    VerifyShard vs{o.shard, o.merged, [&](const ShardRound& round) { return manifest(round, false); }, false, {}};
    KV_RETURN_IF_ERROR(SearchAndVerify(plan, &r, &vs));
    r.shard_round = {vs.stages, vs.stopped};  // after a verification round another may follow
    r.shard_windows = vs.windows, r.shard_probes = vs.probe_units;
  }
  KV_ASSIGN_OR_RETURN(const RunTotals t, job.WriteRound(r.shard_round, true));
  r.wall_s = t.wall_s, r.peak_rss_mb = t.peak_rss_mb;
  r.results_path = job.shard_path();
  return r;
}

}  // namespace

Expected<RecommendResult> RunRecommend(RecommendPlan& plan) {
  const RecommendOptions& o = plan.options;
  KV_ASSIGN_OR_RETURN(const StagedJobRun job,
                      StagedJobRun::Prepare("recommend", o, plan.clock, plan.sensitivity.eval.info.threads));
  RecommendResult r;
  r.policy = plan.policy.name, r.budget = plan.budget, r.budget_bytes_per_token = plan.budget_bytes_per_token;
  r.target_ctx = plan.target_ctx, r.probe_lengths = plan.probe_lengths, r.probe_families = plan.probe_families;
  r.verify_first_window = o.verify_first_window, r.verify_windows = o.windows;
  r.f16_bytes_per_token = F16BytesPerTokenAt(plan.sensitivity.eval.runtime.model->config(), plan.target_ctx);
  if (job.sharded()) return RunRecommendShard(plan, job, std::move(r));
  KV_ASSIGN_OR_RETURN(r.sensitivity, SensitivitySession(plan.sensitivity).Run());
  KV_RETURN_IF_ERROR(SearchAndVerify(plan, &r, nullptr));
  const RunTotals totals = plan.clock.Stop();
  r.wall_s = totals.wall_s, r.peak_rss_mb = totals.peak_rss_mb;
  KV_ASSIGN_OR_RETURN(r.results, RecommendJson(r, plan));
  KV_ASSIGN_OR_RETURN(r.results_path, job.WriteResults(r.results));
  return r;
}

}  // namespace kvaudit
