#include "decide/recommend/recommend_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "decide/targets/deploy_report.h"
#include "decide/targets/target_settings.h"
#include "base/text_columns.h"
#include "run/provenance.h"

namespace kvaudit {
namespace {

using nlohmann::json;

json Num(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

const ModelConfig& Config(const RecommendPlan& plan) { return plan.sensitivity.eval.runtime.model->config(); }

// The held-out numbers the policy judges: overall and the worst bucket up to the target context.
json HeldOut(const ConfigResult& c, const std::vector<Bucket>& buckets, int target) {
  const FidelitySummary& o = c.summary.overall;
  double kld = 0, p99 = 0, top1 = 1, ppl = 0;
  for (size_t b = 0; b < c.summary.buckets.size(); ++b) {
    const FidelitySummary& s = c.summary.buckets[b];
    if (s.tokens == 0 || buckets[b].from > target) continue;
    kld = std::max(kld, s.kld_mean), p99 = std::max(p99, s.kld_p99);
    top1 = std::min(top1, s.top1_agree), ppl = std::max(ppl, s.ppl_ratio);
  }
  return {{"tokens", o.tokens},
          {"kld_mean", Num(o.kld_mean)},
          {"kld_p99", Num(o.kld_p99)},
          {"top1_agree", Num(o.top1_agree)},
          {"ppl_ratio", Num(o.ppl_ratio)},
          {"worst_bucket",
           {{"kld_mean", Num(kld)}, {"kld_p99", Num(p99)}, {"top1_agree", Num(top1)}, {"ppl_ratio", Num(ppl)}}}};
}

json PointJson(const VerifiedPoint& p, const RecommendResult& r, const RecommendPlan& plan) {
  json shapes = json::array();
  for (MixShape s : p.shapes) shapes.push_back(std::string(MixShapeName(s)));
  const ConfigVerdict& v = p.verdict;
  return {{"spec", p.spec},
          {"shapes", shapes},
          {"round", p.round},
          {"scales_dropped", p.scales_dropped},
          {"within_budget", p.within_budget},
          {"bytes_per_token", p.bytes_per_token},
          {"kv_gib_at_target", Num(GibAtContext(p.bytes_per_token, r.target_ctx))},
          {"predicted_kld", Num(p.predicted_kld)},
          {"held_out", p.held_out ? HeldOut(*p.held_out, plan.sensitivity.eval.info.aggregate.buckets, r.target_ctx)
                                  : json(nullptr)},
          {"verdict", OutcomeWord(v.outcome)},
          {"pass", v.pass},
          {"safe_up_to", SafeUpToText(v)},
          {"first_failure", v.first_failure ? json(v.cases[*v.first_failure].text) : json(nullptr)}};
}

// The verdict on an exact setting's configuration as it runs when the checkpoint's scales do not
// load, when that was verified (round 3, scales_dropped); "" otherwise.
std::string DroppedScalesLine(const TargetSettings& e, const std::map<std::string, bool>& verdicts,
                              const std::string& indent) {
  const std::string& dropped = e.scales_dropped_spec;
  const auto it = verdicts.find(dropped);
  if (dropped.empty() || it == verdicts.end()) return "";
  return indent + PadColumn("", 14) + "scales dropped (" + dropped +
         ", verified): " + (it->second ? "passes" : "FAILS") + "\n";
}

// An engine's approximations (closest first) against the verified verdicts: the first that passed,
// and the specs of those before it that failed (unverified ones are skipped).
struct Closest {
  std::optional<CacheConfig> passing;
  std::vector<std::string> failed;
};
Closest ClosestVerified(const TargetSettings& e, const std::map<std::string, bool>& verdicts) {
  Closest out;
  for (const CacheConfig& a : e.approximations) {
    const auto it = verdicts.find(a.spec());
    if (it == verdicts.end()) continue;
    if (it->second) {
      out.passing = a;
      return out;
    }
    out.failed.push_back(a.spec());
  }
  return out;
}

// What an engine should run, verified: the choice itself where the engine stores it exactly, else
// the closest approximation that passed (with its own settings), or null when none passed.
json VerifiedChoiceJson(const TargetSettings& e, const std::map<std::string, bool>& verdicts, const RecommendPlan& plan,
                        const RecommendResult& r) {
  if (e.exact)
    return {{"spec", e.settings_for},
            {"flags", e.flags},
            {"silent_defaults", e.silent_defaults},
            {"command_example", e.command_example},
            {"failed", json::array()}};
  const Closest c = ClosestVerified(e, verdicts);
  if (!c.passing)
    return {{"spec", nullptr},
            {"flags", nullptr},
            {"silent_defaults", nullptr},
            {"command_example", nullptr},
            {"failed", c.failed}};
  const TargetSettings p = SettingsForTarget(e.target, *c.passing, Config(plan), r.target_ctx);
  return {{"spec", c.passing->spec()},
          {"flags", p.flags},
          {"silent_defaults", p.silent_defaults},
          {"command_example", p.command_example},
          {"failed", c.failed}};
}

Expected<json> Choice(const std::optional<size_t>& i, const RecommendResult& r, const RecommendPlan& plan) {
  if (!i) return json(nullptr);
  const VerifiedPoint& p = r.verified[*i];
  KV_ASSIGN_OR_RETURN(const auto targets, SettingsFor(p.config, Config(plan), r.target_ctx));
  const DeployContext d{p.spec, plan.options.model, &Config(plan), r.target_ctx};
  json deploy = DeployJson(d, targets);
  const std::map<std::string, bool> verdicts = VerifiedVerdicts(r);
  for (size_t k = 0; k < targets.size(); ++k)
    deploy["engines"][k]["verified_choice"] = VerifiedChoiceJson(targets[k], verdicts, plan, r);
  return json{
      {"spec", p.spec},
      {"bytes_per_token", p.bytes_per_token},
      {"f16_fraction", Num(static_cast<double>(p.bytes_per_token) / static_cast<double>(r.f16_bytes_per_token))},
      {"kv_gib_at_target", Num(GibAtContext(p.bytes_per_token, r.target_ctx))},
      {"within_budget", p.within_budget},
      {"deploy", deploy}};
}

json PartsJson(const RecommendResult& r) {
  json parts = json::array();
  const auto& cands = r.sensitivity.candidates;
  for (size_t i = 0; i < (cands.empty() ? 0 : cands[0].parts.size()); ++i) {
    json costs = json::array();
    for (size_t c = 0; c < cands.size(); ++c) {
      costs.push_back({{"candidate", cands[c].candidate.name()},
                       {"kld", Num(r.costs[c][i].kld)},
                       {"measured", r.costs[c][i].measured}});
    }
    parts.push_back({{"part", cands[0].parts[i].part.name()}, {"costs", costs}});
  }
  return parts;
}

json FrontsJson(const RecommendResult& r) {
  json fronts = json::array();
  for (const auto& [shape, front] : r.fronts) {
    json points = json::array();
    for (const MixPoint& p : front) {
      points.push_back({{"bytes_per_token", p.bytes_per_token},
                        {"predicted_kld", Num(p.cost)},
                        {"within_budget", p.bytes_per_token <= r.budget_bytes_per_token}});
    }
    fronts.push_back({{"shape", std::string(MixShapeName(shape))}, {"points", points}});
  }
  return fronts;
}

}  // namespace

std::string TargetLines(const std::vector<TargetSettings>& targets, const std::string& indent,
                        const std::map<std::string, bool>& verdicts, const ModelConfig& config, int target_ctx) {
  std::string s;
  for (const TargetSettings& e : targets) {
    s += indent + PadColumn(std::string(TargetName(e.target)), 14);
    if (e.exact) {
      s += JoinWith(e.flags, " ") + "\n";
      for (const std::string& d : e.silent_defaults) s += indent + PadColumn("", 14) + "silently: " + d + "\n";
      s += DroppedScalesLine(e, verdicts, indent);
      continue;
    }
    s += "not exact (" + e.why_not + "); ";
    const Closest c = ClosestVerified(e, verdicts);
    if (c.passing) {
      const TargetSettings p = SettingsForTarget(e.target, *c.passing, config, target_ctx);
      s += "closest that passes " + c.passing->spec() + " (verified): " + JoinWith(p.flags, " ") + "\n";
      for (const std::string& d : p.silent_defaults) s += indent + PadColumn("", 14) + "silently: " + d + "\n";
    } else if (!c.failed.empty()) {
      s += "none of its closest configurations passes (verified: " + JoinWith(c.failed, ", ") + ")\n";
    } else if (e.settings_for.empty()) {
      s += "it can run nothing close\n";
    } else {
      s += "closest " + e.settings_for + " (not verified): " + JoinWith(e.flags, " ") + "\n";
    }
  }
  return s;
}

std::map<std::string, bool> VerifiedVerdicts(const RecommendResult& r) {
  std::map<std::string, bool> out;
  for (const VerifiedPoint& p : r.verified) out[p.spec] = p.verdict.pass;
  return out;
}

std::string ShapesText(const VerifiedPoint& p) {
  if (p.scales_dropped) return "scales dropped";
  if (p.shapes.empty()) return "engine approximation";
  std::string s;
  for (MixShape m : p.shapes) s += (s.empty() ? "" : ",") + std::string(MixShapeName(m));
  return s;
}

std::string VerdictLine(const ConfigVerdict& v) {
  if (!v.first_failure) return OutcomeWord(v.outcome);
  return std::string(OutcomeWord(v.outcome)) + (v.pass ? " (passes with a warning): " : ": ") +
         v.cases[*v.first_failure].text;
}

Expected<json> RecommendJson(const RecommendResult& r, const RecommendPlan& plan) {
  const RecommendOptions& o = plan.options;
  const EvalRunInfo& e = r.sensitivity.eval;
  json verified = json::array();
  for (const VerifiedPoint& p : r.verified) verified.push_back(PointJson(p, r, plan));
  KV_ASSIGN_OR_RETURN(json recommended, Choice(r.recommended, r, plan));
  KV_ASSIGN_OR_RETURN(json uniform, Choice(r.best_uniform, r, plan));
  KV_ASSIGN_OR_RETURN(json cheapest, Choice(r.cheapest_passing, r, plan));
  json j = json{{"kind", "recommend"},
                {"schema_version", kRecommendSchemaVersion},
                {"model", e.model},
                {"model_hash", r.sensitivity.model_hash},
                {"baseline", e.baseline_spec},
                {"target", o.target},
                {"policy", r.policy},
                {"target_context", r.target_ctx},
                {"budget", {{"text", r.budget.text}, {"bytes_per_token", r.budget_bytes_per_token}}},
                {"f16_bytes_per_token", r.f16_bytes_per_token},
                {"smallest_bytes_per_token", r.smallest_bytes_per_token},
                {"calibration",
                 {{"data", e.data},
                  {"ctx", e.ctx},
                  {"first_window", e.first_window},
                  {"windows", e.n_windows},
                  {"stage", StageName(r.sensitivity.stage)},
                  {"parts_end_to_end", r.sensitivity.top_k},
                  {"results", "sensitivity/results.json"}}},
                {"held_out",
                 {{"data", e.data},
                  {"ctx", e.ctx},
                  {"first_window", r.verify_first_window},
                  {"windows", r.verify_windows},
                  {"probe_families", r.probe_families},
                  {"probe_lengths", r.probe_lengths},
                  {"probe_n", o.probe_n},
                  {"runs", r.verify_dirs}}},
                {"parts", PartsJson(r)},
                {"fronts", FrontsJson(r)},
                {"verified", verified},
                {"recommended", recommended},
                {"best_uniform", uniform},
                {"nothing_under_budget", !r.recommended.has_value()},
                {"cheapest_passing", cheapest},
                {"run", {{"threads", e.threads}, {"wall_s", r.wall_s}, {"peak_rss_mb", r.peak_rss_mb}}}};
  j["run"].update(ProvenanceJson());
  return j;
}

std::string BudgetAnswer(const RecommendResult& r) {
  if (r.recommended) return "";
  if (r.cheapest_passing) {
    const VerifiedPoint& p = r.verified[*r.cheapest_passing];
    // Hundredths of f16, rounded up: 0.54xf16 admits 2176 of 4096 bytes, 0.53xf16 would not.
    const double share =
        std::ceil(100.0 * static_cast<double>(p.bytes_per_token) / static_cast<double>(r.f16_bytes_per_token)) / 100.0;
    return "the smallest budget that passes: --budget " + std::to_string(p.bytes_per_token) + " (or " +
           FormatNumber("%.2f", share) + "xf16), for " + p.spec;
  }
  // Nothing verified passes: a larger budget cannot help. The largest point says why.
  std::optional<size_t> largest;
  for (size_t i = 0; i < r.verified.size(); ++i) {
    if (r.verified[i].round < 3 && (!largest || r.verified[i].bytes_per_token > r.verified[*largest].bytes_per_token))
      largest = i;
  }
  std::string why;
  if (largest && r.verified[*largest].verdict.first_failure) {
    const VerifiedPoint& p = r.verified[*largest];
    why = ": even " + p.spec + " (" + std::to_string(p.bytes_per_token) + " bytes/token) fails, first on " +
          p.verdict.cases[*p.verdict.first_failure].text;
  }
  return "no budget passes policy " + r.policy + why +
         "; hint: a looser policy (--policy balanced, or a TOML file: docs/decision.md), or more --windows if the "
         "failure is a near miss";
}

std::string RecommendText(const RecommendResult& r, const RecommendPlan& plan) {
  const EvalRunInfo& e = r.sensitivity.eval;
  std::string s =
      "recommend: " + e.model + ", policy " + r.policy + ", target context " + std::to_string(r.target_ctx) +
      ", budget " + r.budget.text + " = " + std::to_string(r.budget_bytes_per_token) + " bytes/token (f16 " +
      std::to_string(r.f16_bytes_per_token) + ", smallest " + std::to_string(r.smallest_bytes_per_token) + ")\n";
  s += "calibration: windows " + std::to_string(e.first_window) + "-" +
       std::to_string(e.first_window + e.n_windows - 1) + " of " + e.data + " (" + std::to_string(e.ctx) +
       " tokens, stage " + StageName(r.sensitivity.stage) + ", " + std::to_string(r.sensitivity.top_k) +
       " parts end to end per format); held out: windows " + std::to_string(r.verify_first_window) + "-" +
       std::to_string(r.verify_first_window + r.verify_windows - 1) + ", probes";
  for (const std::string& f : r.probe_families) s += " " + f;
  if (r.probe_families.empty()) s += " none (the policy names no probe family)";
  s += "\n\n" + PadColumn("verified on held-out data", 44) + PadColumn("shape", 20) +
       "bytes/tok  predicted  KLD mean  verdict\n";
  for (const VerifiedPoint& p : r.verified) {
    s += PadColumn(p.spec, 44) + PadColumn(ShapesText(p), 20) +
         PadColumn(std::to_string(p.bytes_per_token) + (p.within_budget ? "" : "*"), 11) +
         PadColumn(std::isfinite(p.predicted_kld) ? FormatNumber("%.5f", p.predicted_kld) : "-", 11) +
         PadColumn(p.held_out ? FormatNumber("%.5f", p.held_out->summary.overall.kld_mean) : "-", 10) +
         VerdictLine(p.verdict) + "\n";
  }
  s +=
      "(* above the budget; predicted = the sum of the parts' one-at-a-time KLD on the calibration windows; an engine\n"
      "approximation is what an engine that cannot store a choice runs instead";
  const bool dropped =
      std::any_of(r.verified.begin(), r.verified.end(), [](const VerifiedPoint& p) { return p.scales_dropped; });
  if (dropped)
    s += ";\nscales dropped: a choice at scale 1.0, as engines run it when the checkpoint's scales do not load";
  s += ")\n\n";
  auto line = [&](const char* what, const std::optional<size_t>& i) {
    if (!i) return std::string(what) + ": none of the verified configurations passes\n";
    const VerifiedPoint& p = r.verified[*i];
    return std::string(what) + ": " + p.spec + "  (" + std::to_string(p.bytes_per_token) + " bytes/token, " +
           FormatNumber("%.0f", 100.0 * p.bytes_per_token / r.f16_bytes_per_token) + "% of f16, " +
           FormatNumber("%.3f", GibAtContext(p.bytes_per_token, r.target_ctx)) + " GiB at " +
           std::to_string(r.target_ctx) + " tokens; safe up to " + SafeUpToText(p.verdict) + ")\n";
  };
  if (r.recommended) {
    s += line("recommended", r.recommended);
  } else {
    s += "recommended: nothing under the budget passes policy " + r.policy + "\n";
    s += line("cheapest that passes", r.cheapest_passing);
    s += BudgetAnswer(r) + "\n";
  }
  s += line("best uniform (one K type, one V type)", r.best_uniform);
  std::vector<size_t> shown;  // the recommendation (or the cheapest passing), then the best uniform
  for (const std::optional<size_t>& i : {r.recommended ? r.recommended : r.cheapest_passing, r.best_uniform}) {
    if (i && std::find(shown.begin(), shown.end(), *i) == shown.end()) shown.push_back(*i);
  }
  const std::map<std::string, bool> verdicts = VerifiedVerdicts(r);
  for (size_t i : shown) {
    const VerifiedPoint& p = r.verified[i];
    auto targets = SettingsFor(p.config, Config(plan), r.target_ctx);
    if (!targets) continue;
    s += "\nengine settings for " + p.spec + " (the full settings and memory: kvaudit deploy --kv \"" + p.spec +
         "\"):\n" + TargetLines(*targets, "  ", verdicts, Config(plan), r.target_ctx);
  }
  return s;
}

}  // namespace kvaudit
