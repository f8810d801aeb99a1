#include "decide/recommend/recommend_verify.h"

#include <algorithm>
#include <limits>

#include "decide/targets/measure_target.h"
#include "decide/targets/spec_memory.h"
#include "decide/targets/target_settings.h"
#include "decide/gate/gate_inputs.h"
#include "kv/formats/format_table.h"
#include "probe/session.h"
#include "run/fingerprint.h"
#include "run/run_dir.h"

namespace kvaudit {
namespace {

// k indices evenly spaced over [lo, hi], hi first.
std::vector<size_t> Spread(size_t lo, size_t hi, int k) {
  std::vector<size_t> out;
  if (k <= 1 || lo == hi) return {hi};
  for (int i = 0; i < k; ++i) {
    const size_t at =
        hi - ((hi - lo) * static_cast<size_t>(i) + static_cast<size_t>(k - 1) / 2) / static_cast<size_t>(k - 1);
    if (std::find(out.begin(), out.end(), at) == out.end()) out.push_back(at);
  }
  return out;
}

struct Window {
  std::optional<size_t> lo, hi;  // inclusive range of front indices to pick from
};

// Round 1: from the best point under the budget down to the fewest-bytes point predicted to pass.
// Round 2: from the first point above the budget up to the first predicted to pass.
Window RangeOf(const MixProblem& problem, const MixFront& front, uint64_t budget, std::optional<double> kld_max,
               int round, const CacheConfig& baseline) {
  auto usable = [&](size_t i) { return !(problem.Config(front[i]) == baseline); };
  auto predicted_pass = [&](size_t i) { return !kld_max || front[i].cost <= *kld_max; };
  const BudgetFit fit = CheapestUnder(front, budget);
  Window w;
  if (round == 1) {
    if (!fit.best) return w;
    size_t hi = *fit.best;
    while (!usable(hi)) {
      if (hi == 0) return w;
      --hi;
    }
    size_t lo = hi;
    if (kld_max) {
      for (size_t i = 0; i <= hi; ++i) {
        if (predicted_pass(i)) {
          lo = i;
          break;
        }
      }
    } else {
      lo = 0;
    }
    w.lo = lo, w.hi = hi;
    return w;
  }
  size_t lo = fit.n_within, hi = front.size();
  for (size_t i = lo; i < front.size(); ++i) {
    if (!usable(i)) break;
    hi = i;
    if (predicted_pass(i)) break;
  }
  if (hi == front.size()) return w;
  w.lo = lo, w.hi = hi;
  return w;
}

void Add(const MixProblem& problem, const MixPoint& p, MixShape shape, uint64_t budget, int round,
         std::vector<VerifiedPoint>* out) {
  CacheConfig config = problem.Config(p);
  const std::string spec = config.spec();
  for (VerifiedPoint& v : *out) {
    if (v.spec != spec) continue;
    if (std::find(v.shapes.begin(), v.shapes.end(), shape) == v.shapes.end()) v.shapes.push_back(shape);
    return;
  }
  VerifiedPoint v;
  v.config = std::move(config), v.spec = spec, v.shapes = {shape};
  v.bytes_per_token = p.bytes_per_token, v.predicted_kld = p.cost;
  v.within_budget = p.bytes_per_token <= budget, v.round = round;
  out->push_back(std::move(v));
}

}  // namespace

ShapedFronts SearchFronts(const MixProblem& problem, std::optional<DeployTarget> engine, const ModelConfig* model) {
  ShapedFronts out;
  if (engine) {
    KV_CHECK(model != nullptr);
    MixProblem restricted = problem;
    restricted.RestrictTo([&](const CacheConfig& c) { return RunsExactly(*engine, c, *model); });
    ShapedFronts runnable = SearchFronts(restricted);
    if (*engine == DeployTarget::kVllm)
      runnable.push_back({MixShape::kSkipLayers, SearchFront(restricted, MixShape::kSkipLayers)});
    for (auto& [shape, front] : runnable) {
      MixFront kept;
      for (MixPoint& p : front) {
        if (RunsExactly(*engine, problem.Config(p), *model)) kept.push_back(std::move(p));
      }
      if (!kept.empty()) out.push_back({shape, std::move(kept)});
    }
    return out;
  }
  out.push_back({MixShape::kPerLayer, SearchFront(problem, MixShape::kPerLayer)});
  bool all_share = true;
  const Part& k0 = problem.part(0, 'k');
  const Part& v0 = problem.part(0, 'v');
  for (int l = 0; l < problem.n_layers() && all_share; ++l) {
    for (size_t k = 0; k < k0.choices.size() && all_share; ++k) {
      for (size_t v = 0; v < v0.choices.size() && all_share; ++v) {
        all_share = problem.Compatible(l, static_cast<int>(k), static_cast<int>(v));
      }
    }
  }
  if (all_share) out.push_back({MixShape::kFirstLast, SearchFront(problem, MixShape::kFirstLast)});
  if (problem.HasBothLayerKinds()) out.push_back({MixShape::kByKind, SearchFront(problem, MixShape::kByKind)});
  out.push_back({MixShape::kUniform, SearchFront(problem, MixShape::kUniform)});
  return out;
}

std::vector<VerifiedPoint> ChoosePoints(const MixProblem& problem, const ShapedFronts& fronts, uint64_t budget,
                                        std::optional<double> kld_max, int per_layer_points, int round,
                                        const CacheConfig& baseline) {
  std::vector<VerifiedPoint> out;
  for (const auto& [shape, front] : fronts) {
    if (front.empty()) continue;
    const Window w = RangeOf(problem, front, budget, kld_max, round, baseline);
    if (!w.hi) continue;
    // Per-layer and skip-layers (vLLM's whole search space) get points spread up to the budget.
    const bool spread = shape == MixShape::kPerLayer || shape == MixShape::kSkipLayers;
    const int k = spread ? per_layer_points : shape == MixShape::kUniform ? 2 : 1;
    std::vector<size_t> picks;
    if (spread || round == 2) {
      picks = Spread(*w.lo, *w.hi, k);
    } else {  // under the budget, uniform and first/last: the best points that fit
      for (size_t i = 0; i < static_cast<size_t>(k) && i <= *w.hi; ++i) picks.push_back(*w.hi - i);
    }
    for (size_t i : picks) Add(problem, front[i], shape, budget, round, &out);
  }
  std::stable_sort(out.begin(), out.end(), [](const VerifiedPoint& a, const VerifiedPoint& b) {
    return a.bytes_per_token > b.bytes_per_token;
  });
  return out;
}

namespace {

// Whether some tensor is stored in a format with a per-tensor scale taken from calibrated or
// checkpoint scales (scale=calib, scale=ckpt).
bool ReadsScales(const CacheConfig& c, const ModelConfig& model) {
  for (int l = 0; l < model.n_layers; ++l) {
    for (int h = 0; h < model.n_kv_heads; ++h) {
      const HeadConfig p = c.ForHead(model, l, h);
      const bool from_file = p.scale == Fp8ScaleMode::kCalib || p.scale == Fp8ScaleMode::kCkpt;
      if (from_file && (HasTensorScale(p.k) || HasTensorScale(p.v))) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<VerifiedPoint> TargetApproximations(const std::vector<CacheConfig>& chosen,
                                                const std::vector<VerifiedPoint>& verified, const ModelConfig& config,
                                                int target_ctx, const CacheConfig& baseline) {
  std::vector<VerifiedPoint> out;
  auto known = [&](const CacheConfig& a) {
    auto same = [&](const VerifiedPoint& p) { return p.config == a; };
    return a == baseline || std::any_of(verified.begin(), verified.end(), same) ||
           std::any_of(out.begin(), out.end(), same);
  };
  for (const CacheConfig& choice : chosen) {
    // Every engine that reads a checkpoint's k_scale/v_scale runs scale 1.0 when its loader drops
    // them, without an error (decide/targets/target_fp8.cc DroppedScales): that case is judged too.
    if (ReadsScales(choice, config) && !known(choice.WithoutScales())) {
      VerifiedPoint v;
      v.config = choice.WithoutScales(), v.spec = v.config.spec(), v.round = 3, v.scales_dropped = true;
      v.predicted_kld = std::numeric_limits<double>::quiet_NaN();
      out.push_back(std::move(v));
    }
    auto targets = SettingsFor(choice, config, target_ctx);
    if (!targets) continue;
    for (const TargetSettings& e : *targets) {
      for (const CacheConfig& a : e.exact ? std::vector<CacheConfig>{} : e.approximations) {
        if (known(a)) continue;
        VerifiedPoint v;
        v.config = a, v.spec = a.spec(), v.round = 3, v.predicted_kld = std::numeric_limits<double>::quiet_NaN();
        out.push_back(std::move(v));
      }
    }
  }
  return out;
}

namespace {

// Where a round's eval and probe run, and as which shard (none: the whole run).
struct RoundPlace {
  std::string base;
  bool restart = false;
  ShardSpec shard;
};

// The recommendation's options, placed: its stages run in place.base/<stage>.
JobOptions Placed(const RecommendOptions& o, const RoundPlace& place) {
  JobOptions at = o;
  at.out = place.base, at.restart = place.restart, at.shard = place.shard;
  return at;
}

ProbeOptions VerifyProbeOptions(const RecommendPlan& plan, const std::vector<std::string>& specs,
                                const RoundPlace& place) {
  const RecommendOptions& o = plan.options;
  ProbeOptions p = StageOptions<ProbeOptions>(Placed(o, place), "probe");
  p.kv = {plan.sensitivity.eval.info.baseline_spec, specs, o.kv.kv_calib};
  p.families = plan.probe_families, p.lengths = plan.probe_lengths, p.n = o.probe_n, p.custom = o.custom;
  return p;
}

// Unsharded: DIR/<dir>. A shard: MERGED/<dir> when merged there (resumed wholly), else its own part
// under DIR/<dir>, announced through before_compute.
Expected<RoundPlace> PlaceRound(const RecommendPlan& plan, const std::string& dir, VerifyShard* shard) {
  const RecommendOptions& o = plan.options;
  if (!shard) return RoundPlace{SubDir(o.out, dir), o.restart, {}};
  const std::string merged = SubDir(shard->merged, dir);
  const bool probes = !plan.probe_families.empty();
  if (!shard->merged.empty() && HasCompleteResults(SubDir(merged, "eval")) &&
      (!probes || HasCompleteResults(SubDir(merged, "probe")))) {
    return RoundPlace{merged, false, {}};
  }
  shard->stopped = true;
  shard->stages = {dir + "/eval"};
  if (probes) shard->stages.push_back(dir + "/probe");
  KV_RETURN_IF_ERROR(shard->before_compute({shard->stages, true}));
  return RoundPlace{SubDir(o.out, dir), o.restart, shard->shard};
}

}  // namespace

Status VerifyRound(RecommendPlan& plan, std::vector<VerifiedPoint>* points, std::string* dir, VerifyShard* shard) {
  const RecommendOptions& o = plan.options;
  std::vector<std::string> specs;
  for (const VerifiedPoint& p : *points) specs.push_back(p.spec);
  // The policy's reference, if any, after the points (their results keep the points' indices).
  if (plan.policy.relative_to) {
    KV_ASSIGN_OR_RETURN(const Target* target, TargetNamed(o.target));
    AddReferenceConfig(*target, *plan.policy.relative_to, &specs);
  }
  std::string joined;
  for (const std::string& s : specs) joined += s + "\n";
  const std::string round = std::to_string(points->empty() ? 1 : points->front().round);
  *dir = "verify-" + round + "-" + HexHash(HashBytes(joined.data(), joined.size(), 0x7265636f)).substr(0, 8);
  KV_ASSIGN_OR_RETURN(const RoundPlace place, PlaceRound(plan, *dir, shard));
  const std::string& base = place.base;
  const std::string baseline = plan.sensitivity.eval.info.baseline_spec;

  EvalOptions e = StageOptions<EvalOptions>(Placed(o, place), "eval");
  e.kv = {baseline, specs, o.kv.kv_calib};
  e.ctx = o.ctx, e.windows = o.windows, e.first_window = o.verify_first_window, e.attn_samples = 0;
  ModelRuntime& runtime = plan.sensitivity.eval.runtime;
  auto eval_plan = EvalPlan::FromWindows(std::move(e), std::move(runtime), plan.all_windows);
  if (!eval_plan) return eval_plan.error();
  auto eval = EvalSession(*eval_plan).Run();
  runtime = std::move(eval_plan->runtime);  // handed back for the next round
  if (!eval) return eval.error();
  if (place.shard.on()) {  // this shard's part of the round: its eval windows, its probe units; no verdicts
    shard->windows = eval->shard_windows;
    if (plan.probe_families.empty()) return Status::Ok();
    KV_ASSIGN_OR_RETURN(ProbePlan probe_plan, ProbePlan::Make(VerifyProbeOptions(plan, specs, place)));
    KV_ASSIGN_OR_RETURN(const ProbeSessionResult probe, ProbeSession(probe_plan).Run());
    shard->probe_units = static_cast<int>(probe.probes.size() + probe.variance.size() + probe.drift.size());
    return Status::Ok();
  }
  for (size_t i = 0; i < points->size(); ++i) {
    VerifiedPoint& p = (*points)[i];
    p.held_out = eval->configs[i];
    if (p.round == 3) {  // not from a front: its bytes are the eval's (the same accounting)
      p.bytes_per_token = p.held_out->bytes_per_token;
      const ModelConfig& c = runtime.model->config();
      if (c.n_sliding_layers() > 0) {  // at the target context, sliding layers holding their window
        KV_ASSIGN_OR_RETURN(const KvMemory m, SpecMemory(c, eval_plan->configs.config(i + 1), plan.target_ctx,
                                                         eval_plan->configs.calibration().get()));
        p.bytes_per_token = m.bytes_per_token;
      }
      p.within_budget = p.bytes_per_token <= plan.budget_bytes_per_token;
    }
  }

  std::vector<std::string> judged = {SubDir(base, "eval")};
  if (!plan.probe_families.empty()) {
    KV_ASSIGN_OR_RETURN(ProbePlan probe_plan, ProbePlan::Make(VerifyProbeOptions(plan, specs, place)));
    auto probe = ProbeSession(probe_plan).Run();
    if (!probe) return probe.error();
    judged.push_back(SubDir(base, "probe"));
  }

  KV_ASSIGN_OR_RETURN(const GateInputs inputs, LoadGateInputs(judged));
  KV_ASSIGN_OR_RETURN(const GateReport report, EvaluateGate(plan.policy, inputs));
  for (VerifiedPoint& point : *points) {
    auto it = std::find_if(report.configs.begin(), report.configs.end(),
                           [&](const ConfigVerdict& v) { return v.config == point.spec; });
    KV_CHECK_MSG(it != report.configs.end(), point.spec.c_str());
    point.verdict = *it;
  }
  return Status::Ok();
}

}  // namespace kvaudit
