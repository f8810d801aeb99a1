#include "decide/audit/audit_report.h"

#include <algorithm>
#include <map>
#include <cmath>
#include <cstdio>

#include "decide/recommend/recommend_report.h"
#include "probe/instance.h"
#include "base/text_columns.h"
#include "run/provenance.h"
#include "run/run_dir.h"

namespace kvaudit {
namespace {

using nlohmann::json;

Expected<std::vector<TargetSettings>> TargetsFor(const CacheConfig& config, const AuditPlan& plan,
                                                 const ModelConfig& cfg) {
  return SettingsFor(config, cfg, plan.target_ctx);
}

// "--target llama.cpp" and, when it was not given, why it was chosen.
std::string TargetHeader(const AuditPlan& plan) {
  const std::string name(plan.target->name);
  if (!plan.target_default) return "--target " + name;
  return "--target " + name +
         (name == "native" ? " (default: not every configuration is a plain llama.cpp cache type)"
                           : " (default: every configuration is a llama.cpp cache type)");
}

// This engine's decode speed of configuration i (0: the baseline), when --bench ran.
json Speed(const AuditResult& r, size_t i) { return r.bench.empty() ? json(nullptr) : json(r.bench[i].tokens_per_s); }

json BenchJson(const AuditResult& r) {
  if (r.bench.empty()) return nullptr;
  const DecodeSpeedOptions& b = r.bench_options;
  return {{"what", "decode tokens/s of kvaudit's own engine (f32 compute) on this machine, not the deployment's"},
          {"depth", b.depth},
          {"tokens_per_round", b.tokens},
          {"rounds", b.rounds},
          {"threads", r.threads},
          {"baseline_tokens_per_s", r.bench[0].tokens_per_s}};
}

// Null when the configuration's bytes are unknown (an --endpoint's cache is the server's business).
json OrNull(const std::optional<uint64_t>& bytes, double value) { return bytes ? json(value) : json(nullptr); }

json ConfigJson(const AuditConfig& c, const AuditResult& r, size_t i) {
  const ConfigVerdict& v = c.verdict;
  const double bytes = static_cast<double>(c.bytes_per_token.value_or(0));
  return {{"decode_tokens_per_s", Speed(r, i + 1)},
          {"spec", c.spec},
          {"endpoint", c.endpoint},
          {"reported_cache", c.reported ? c.reported->ToJson() : json(nullptr)},
          {"reported_differs", c.reported_differs.empty() ? json(nullptr) : json(c.reported_differs)},
          {"bytes_per_token", c.bytes_per_token ? json(*c.bytes_per_token) : json(nullptr)},
          {"f16_fraction", OrNull(c.bytes_per_token, bytes / static_cast<double>(r.f16_bytes_per_token))},
          {"kv_gib_at_target", OrNull(c.bytes_per_token, GibAtContext(c.bytes_per_token.value_or(0), r.target_ctx))},
          {"verdict", OutcomeWord(v.outcome)},
          {"pass", v.pass},
          {"safe_up_to", v.safe_up_to ? json(*v.safe_up_to) : json(nullptr)},
          {"safe_up_to_is_all_measured", v.safe_up_to_is_all_measured},
          {"first_failure", v.first_failure ? json(v.cases[*v.first_failure].text) : json(nullptr)},
          {"failed_criteria",
           [&] {
             int n = 0;
             for (const GateCase& g : v.cases) n += g.pass ? 0 : 1;
             return n;
           }()},
          {"not_judged", v.not_judged},
          {"no_signal", v.no_signal},
          {"lost_custom_probes", v.lost_custom_probes}};
}

// The probe families the baseline fails (the same for every configuration: they are the baseline's
// own counts), once.
std::string NoSignalLine(const AuditResult& r) {
  std::vector<std::string> families;
  for (const AuditConfig& c : r.configs) {
    for (const std::string& n : c.verdict.no_signal)
      if (std::find(families.begin(), families.end(), n) == families.end()) families.push_back(n);
  }
  if (families.empty()) return "";
  return "no signal: " + JoinWith(families, "; ") +
         ". The model fails these probes with the full-precision cache, so they cannot show a loss; their criteria "
         "are skipped, not passed.\n";
}

// The probes' prompt lengths, "512-4096 tokens" (custom probes bring their own).
std::string ProbeLengthsText(const std::vector<int>& lengths) {
  if (lengths.empty()) return "";
  const auto [lo, hi] = std::minmax_element(lengths.begin(), lengths.end());
  return " at " + (*lo == *hi ? std::to_string(*hi) : std::to_string(*lo) + "-" + std::to_string(*hi)) + " tokens";
}

// When the longest probe is shorter than the target context (and the model's context leaves room
// for a longer one), the verdict's probe criteria say nothing about the context beyond it: the
// default lengths stop at 4096 (probe/instance.h DefaultProbeLengths), once.
std::string ProbeReachLine(const std::vector<int>& lengths, int target_ctx, int model_ctx) {
  if (lengths.empty()) return "";
  const int longest = *std::max_element(lengths.begin(), lengths.end());
  if (longest >= std::min(target_ctx, model_ctx - kProbeAnswerReserve)) return "";
  return "probes ran up to " + std::to_string(longest) + " tokens of the target context " + std::to_string(target_ctx) +
         ": nothing was probed beyond " + std::to_string(longest) + " (--lengths with " + std::to_string(target_ctx) +
         " probes it; the longest length costs the most).\n";
}

std::string PointLine(const VerifiedPoint& p, const RecommendResult& rec) {
  return p.spec + "  (" + std::to_string(p.bytes_per_token) + " bytes/token, " +
         FormatNumber("%.0f%% of f16", 100.0 * p.bytes_per_token / rec.f16_bytes_per_token) + ", " +
         FormatNumber("%.3f GiB", GibAtContext(p.bytes_per_token, rec.target_ctx)) + "; " + ShapesText(p) +
         "; safe up to " + SafeUpToText(p.verdict) + ")\n";
}

std::string RecommendBlock(const RecommendResult& rec, const AuditPlan& plan, const ModelConfig& cfg,
                           const std::map<std::string, bool>& verdicts);

// What to try when nothing tested passes: the per-layer search where it can run (an in-process
// baseline), and a larger uniform cache where none was tested.
std::string NoneSafeHint(const AuditResult& r, const AuditPlan& plan) {
  if (r.recommend) return "";
  // An --endpoint's cache is unknown: it may be the larger one already.
  const bool q8_tested = std::any_of(r.configs.begin(), r.configs.end(), [](const AuditConfig& c) {
    return !c.config || c.spec.starts_with("k=q8_0,v=q8_0") || c.spec.starts_with("k=f16,v=f16");
  });
  const std::string larger = q8_tested ? "" : "test k=q8_0,v=q8_0";
  const bool search = plan.options.remote.baseline_endpoint.empty() && plan.options.serve_cmd.empty();
  if (!search) return larger.empty() ? "" : "; hint: " + larger;
  return "; hint: give --budget B to search per-layer mixes" + (larger.empty() ? "" : ", or " + larger);
}

// Which configurations ran on servers, and where: the measured line of an in-process audit says
// how kvaudit emulated the engine; here the engine itself ran them.
std::string ServedLines(const AuditResult& r, const AuditPlan& plan) {
  std::vector<std::string> names;
  std::string warnings;  // a server whose own report contradicts what was named
  for (const AuditConfig& c : r.configs) {
    if (!c.endpoint.is_null()) names.push_back(c.spec + " at " + c.endpoint.value("url", std::string()));
    if (!c.reported_differs.empty()) warnings += "WARNING: " + c.spec + ": " + c.reported_differs + "\n";
  }
  if (names.empty()) return "";
  const std::string how = plan.options.serve_cmd.empty() ? "through the servers given"
                                                         : "on servers kvaudit started (--serve-cmd; logs in " +
                                                               SubDir(plan.options.out, "servers") + ")";
  return "measured " + how + ": " + JoinWith(names, "; ") + "\n" + warnings;
}

}  // namespace

namespace {

std::string RecommendBlock(const RecommendResult& rec, const AuditPlan& plan, const ModelConfig& cfg,
                           const std::map<std::string, bool>& verdicts) {
  std::string s = "\nrecommendation under --budget " + rec.budget.text + " (" +
                  std::to_string(rec.budget_bytes_per_token) +
                  " bytes/token), verified on the windows and probes above (" + std::to_string(rec.verified.size()) +
                  " candidates; recommend/results.json):\n";
  std::optional<size_t> shown = rec.recommended;
  if (rec.recommended) {
    s += "  recommended:  " + PointLine(rec.verified[*rec.recommended], rec);
  } else {
    s += "  nothing under the budget passes policy " + rec.policy + "\n";
    shown = rec.cheapest_passing;
    s += rec.cheapest_passing ? "  cheapest that passes: " + PointLine(rec.verified[*rec.cheapest_passing], rec)
                              : "  no verified configuration passes\n";
    s += "  " + BudgetAnswer(rec) + "\n";
  }
  if (rec.best_uniform) s += "  best uniform: " + PointLine(rec.verified[*rec.best_uniform], rec);
  std::vector<size_t> listed;  // the recommendation (or the cheapest passing), then the best uniform
  for (const std::optional<size_t>& i : {shown, rec.best_uniform}) {
    if (i && std::find(listed.begin(), listed.end(), *i) == listed.end()) listed.push_back(*i);
  }
  for (size_t i : listed) {
    const std::string& spec = rec.verified[i].spec;
    if (auto targets = TargetsFor(rec.verified[i].config, plan, cfg)) {
      s += "  settings for " + spec + ":\n" + TargetLines(*targets, "    ", verdicts, cfg, plan.target_ctx);
    }
  }
  return s;
}

}  // namespace

Expected<json> AuditJson(const AuditResult& r, const AuditPlan& plan) {
  const AuditOptions& o = plan.options;
  json configs = json::array();
  for (size_t i = 0; i < r.configs.size(); ++i) configs.push_back(ConfigJson(r.configs[i], r, i));
  json deploy = nullptr;
  if (r.cheapest_passing) deploy = r.configs[*r.cheapest_passing].spec;
  json recommend = nullptr;
  if (r.recommend) {
    const RecommendResult& rec = *r.recommend;
    auto spec = [&](const std::optional<size_t>& i) { return i ? json(rec.verified[*i].spec) : json(nullptr); };
    recommend = {{"results", "recommend/results.json"},
                 {"budget", rec.budget.text},
                 {"budget_bytes_per_token", rec.budget_bytes_per_token},
                 {"recommended", spec(rec.recommended)},
                 {"best_uniform", spec(rec.best_uniform)},
                 {"nothing_under_budget", !rec.recommended.has_value()},
                 {"cheapest_passing", spec(rec.cheapest_passing)}};
  }
  json j = json{{"kind", "audit"},
                {"schema_version", kAuditSchemaVersion},
                {"model", o.model},
                {"model_hash", r.model_hash},
                {"workload", r.workload.name},
                {"policy", r.policy},
                {"policy_text", plan.policy.text},
                {"target", std::string(plan.target->name)},
                {"target_default", plan.target_default},
                {"target_context", r.target_ctx},
                {"baseline", r.baseline},
                {"serve_cmd", o.serve_cmd.empty() ? json(nullptr) : json(o.serve_cmd)},
                {"f16_bytes_per_token", r.f16_bytes_per_token},
                {"data", o.data},
                {"ctx", o.ctx},
                {"first_window", o.first_window},
                {"windows", o.windows},
                {"probe_families", r.probe_families},
                {"eval", "eval/results.json"},
                {"probe", "probe/results.json"},
                {"junit", "gate.xml"},
                {"markdown", "summary.md"},
                {"configs", configs},
                {"passed", static_cast<int>(r.configs.size()) - r.gate.failed()},
                {"failed", r.gate.failed()},
                {"inconclusive", r.gate.inconclusive()},
                {"inconclusive_counts_as", r.gate.inconclusive_fails ? "fail" : "warn"},
                {"relative_to", r.gate.reference.empty() ? json(nullptr) : json(r.gate.reference)},
                {"deploy", deploy},
                {"recommend", recommend},
                {"bench", BenchJson(r)},
                {"signatures", r.signatures ? r.signatures->ToJson() : json(nullptr)},
                {"run", {{"threads", r.threads}, {"wall_s", r.wall_s}, {"peak_rss_mb", r.peak_rss_mb}}}};
  j["run"].update(ProvenanceJson());
  return j;
}

std::string AuditText(const AuditResult& r, const AuditPlan& plan) {
  const AuditOptions& o = plan.options;
  std::string s = "\n=== kvaudit audit: " + o.model + ", workload " + r.workload.name + ", policy " + r.policy +
                  (r.gate.reference.empty() ? "" : " (relative to " + r.gate.reference + ")") + ", target context " +
                  std::to_string(r.target_ctx) + ", " + TargetHeader(plan) + " ===\n";
  s += "eval: windows " + std::to_string(o.first_window) + "-" + std::to_string(o.first_window + o.windows - 1) +
       " of " + o.data + " (" + std::to_string(o.ctx) + " tokens each), against " + r.baseline +
       "; probes: " + JoinWith(r.probe_families, " ") + ProbeLengthsText(plan.probe.lengths) + "\n\n";
  s += PadColumn("configuration", 36) + PadColumn("bytes/token", 12) + PadColumn("% of f16", 9) +
       PadColumn("GiB at " + std::to_string(r.target_ctx), 12) + (r.bench.empty() ? "" : PadColumn("tok/s*", 8)) +
       PadColumn("verdict", 14) + PadColumn("safe up to", 24) + "first failure\n";
  for (size_t i = 0; i < r.configs.size(); ++i) {
    const AuditConfig& c = r.configs[i];
    const ConfigVerdict& v = c.verdict;
    const uint64_t bytes = c.bytes_per_token.value_or(0);
    const bool known = c.bytes_per_token.has_value();
    s += PadColumn(c.spec, 36) + PadColumn(known ? std::to_string(bytes) : "?", 12) +
         PadColumn(known ? FormatNumber("%.0f%%", 100.0 * bytes / r.f16_bytes_per_token) : "?", 9) +
         PadColumn(known ? FormatNumber("%.3f", GibAtContext(bytes, r.target_ctx)) : "?", 12) +
         (r.bench.empty() ? "" : PadColumn(FormatNumber("%.0f", r.bench[i + 1].tokens_per_s), 8)) +
         PadColumn(OutcomeWord(v.outcome), 14) + PadColumn(SafeUpToText(v), 24) +
         (v.first_failure ? v.cases[*v.first_failure].text : std::string("-")) + "\n";
  }
  if (!r.bench.empty()) {
    s += "* decode tokens/s of kvaudit's own engine on this machine (not the deployment's) at depth " +
         std::to_string(r.bench_options.depth) + ", " + std::to_string(r.threads) + " threads, median of " +
         std::to_string(r.bench_options.rounds) + " rounds of " + std::to_string(r.bench_options.tokens) +
         " steps; baseline " + r.baseline + ": " + FormatNumber("%.0f", r.bench[0].tokens_per_s) + "\n";
  }
  s += "\n" + NoSignalLine(r) + ProbeReachLine(plan.probe.lengths, r.target_ctx, r.config.max_ctx);
  if (const std::string note = r.gate.InconclusiveNote(); !note.empty()) s += note + ".\n";
  for (const AuditConfig& c : r.configs) {
    if (c.verdict.lost_custom_probes.empty()) continue;
    s += "custom probes lost under " + c.spec + ": " + JoinWith(c.verdict.lost_custom_probes, "; ") + " (" +
         (r.gate.lost_custom_probe_fails ? "each fails it" : "a warning") + " under policy " + r.policy + ")\n";
  }
  s += std::to_string(r.configs.size() - r.gate.failed()) + " of " + std::to_string(r.configs.size()) +
       " configurations pass policy " + r.policy + ".\n";
  // Every verdict of this audit: the configurations under test, then the recommendation's points.
  std::map<std::string, bool> verdicts = r.recommend ? VerifiedVerdicts(*r.recommend) : std::map<std::string, bool>{};
  for (const AuditConfig& c : r.configs) verdicts[c.spec] = c.verdict.pass;
  s += ServedLines(r, plan);
  const AuditConfig& shown = r.configs[r.cheapest_passing.value_or(0)];
  if (shown.config && shown.endpoint.is_null())
    s += MeasuredLine(*plan.target, *shown.config, r.config, r.target_ctx) + "\n";
  if (r.cheapest_passing && !shown.config) {
    s += "deploy " + shown.spec + " (it passes; its cache is the server's, unknown to kvaudit, so no settings)\n";
  } else if (r.cheapest_passing) {
    s += "deploy " + shown.spec + " (the fewest bytes of those that pass):\n";
    if (auto targets = TargetsFor(*shown.config, plan, r.config))
      s += TargetLines(*targets, "  ", verdicts, r.config, plan.target_ctx);
  } else {
    s += "none of the configurations tested is safe for this workload at " + std::to_string(r.target_ctx) + " tokens" +
         NoneSafeHint(r, plan) + "\n";
  }
  if (r.recommend) s += RecommendBlock(*r.recommend, plan, r.config, verdicts);
  s += "\nresults: " + r.results_path + "; JUnit " + o.out + "/gate.xml, markdown " + o.out +
       "/summary.md; the same verdicts: kvaudit gate --results " + o.out + " --policy " + r.policy + "\n";
  return s;
}

}  // namespace kvaudit
