// Section 1: the verdict. Per configuration PASS/FAIL against the policy, the context it is safe
// up to and the first failing criterion (the audit's results.json, the gate's own words), then
// what to deploy: the fewest bytes under test that pass and the recommendation with each engine's
// settings (recommend/results.json recommended.deploy), ready to copy.
#include "report/html_escape.h"
#include "report/sections.h"
#include "report/value_ref.h"

namespace kvaudit::report {
namespace {

using nlohmann::json;

std::string AuditTable(const ReportContext& ctx, const RunDirectory& d) {
  const ResultsFile& a = *d.audit;
  std::string out = "<p class=\"headline\">" + ValueSpan(d, a, "/passed", ValueFormat::kInt) + " of " +
                    std::to_string(a.doc.value("configs", json::array()).size()) + " configurations pass policy <b>" +
                    ValueSpan(d, a, "/policy", ValueFormat::kText) + "</b> at target context " +
                    ValueSpan(d, a, "/target_context", ValueFormat::kInt) + " (workload " +
                    ValueSpan(d, a, "/workload", ValueFormat::kText) + ", baseline " +
                    ValueSpan(d, a, "/baseline", ValueFormat::kText) + ").</p>\n";
  out += "<table class=\"sortable\" id=\"verdict-table-" + std::to_string(d.index) +
         "\"><thead><tr><th>configuration</th><th>verdict</th><th>safe up to (tokens)</th>"
         "<th>first failing criterion</th><th>failed criteria</th><th>bytes/token</th><th>of f16</th>"
         "<th>KV GiB at target</th></tr></thead><tbody>\n";
  const json& configs = a.doc.value("configs", json::array());
  for (size_t i = 0; i < configs.size(); ++i) {
    const std::string base = Pointer({"configs", std::to_string(i)});
    const json& c = configs[i];
    out += "<tr data-config=\"" + EscapeHtml(ctx.NameOf(d, c.value("spec", ""))) + "\">" +
           ValueCell(d, a, base + "/spec", ValueFormat::kText) +
           ValueCell(d, a, base + (c.contains("verdict") ? "/verdict" : "/pass"), ValueFormat::kPassFail) +
           SafeUpToCell(d, a, base) + ValueCell(d, a, base + "/first_failure", ValueFormat::kText) +
           ValueCell(d, a, base + "/failed_criteria", ValueFormat::kInt) +
           ValueCell(d, a, base + "/bytes_per_token", ValueFormat::kBytes) +
           ValueCell(d, a, base + "/f16_fraction", ValueFormat::kPercent) +
           ValueCell(d, a, base + "/kv_gib_at_target", ValueFormat::kGib) + "</tr>\n";
  }
  out += "</tbody></table>\n";
  // The families the baseline fails are the baseline's own counts, the same in every row: shown once.
  const json& no_signal = configs.empty() ? json::array() : configs[0].value("no_signal", json::array());
  if (!no_signal.empty()) {
    out += "<p class=\"note\">No signal: ";
    for (size_t k = 0; k < no_signal.size(); ++k) {
      out += (k ? "; " : "") + ValueSpan(d, a, "/configs/0/no_signal/" + std::to_string(k), ValueFormat::kText);
    }
    out +=
        ". The model fails these probes with the full-precision cache, so they cannot show a loss; their "
        "criteria are skipped, not passed.</p>\n";
  }
  const json* deploy = Lookup(a, "/deploy");
  out += deploy && !deploy->is_null() ? "<p>Fewest bytes among the configurations under test that pass: <code>" +
                                            ValueSpan(d, a, "/deploy", ValueFormat::kText) + "</code>.</p>\n"
                                      : "<p class=\"fail\">No configuration under test passes the policy.</p>\n";
  return out;
}

// The first of an engine's approximations (closest first) that a round-3 verification passed.
std::string ClosestVerified(const json& engine, const json& verified) {
  const json& approx = engine.value("approximations", json::array());
  if (approx.empty()) return "";
  bool any_verified = false;
  for (const json& spec : approx) {
    for (const json& v : verified) {
      if (v.value("spec", "") != spec.get<std::string>()) continue;
      any_verified = true;
      if (v.value("pass", false))
        return "closest that passes: <code>" + EscapeHtml(spec.get<std::string>()) + "</code> (verified)";
    }
  }
  return any_verified ? "none of its closest configurations passes (verified)" : "closest configurations not verified";
}

// "a, b, c" of a JSON array of strings.
std::string JoinSpecs(const json& specs) {
  std::string out;
  for (const json& s : specs) out += (out.empty() ? "" : ", ") + s.get<std::string>();
  return out;
}

// The settings cell: what the engine should run, verified (recommend's deploy.engines[].
// verified_choice: the choice itself when the engine stores it, else its closest approximation
// that passed); none passed: no settings to copy, and the failed ones named. Results written
// before verified_choice existed show the engine's closest settings with the verdicts beside them.
std::string SettingsCell(const RunDirectory& d, const ResultsFile& r, const std::string& base, const json& e,
                         const json& verified) {
  const std::string why = e.value("exact", false) ? "" : EscapeHtml(e.value("why_not", "")) + "; ";
  if (!e.contains("verified_choice")) {
    return "<td>for <code>" + ValueSpan(d, r, base + "/settings_for", ValueFormat::kText) +
           "</code>:<pre class=\"copy\"><code>" + ValueSpan(d, r, base + "/command_example", ValueFormat::kText) +
           "</code></pre></td><td>" + why + ClosestVerified(e, verified) + "</td>";
  }
  const json& choice = e["verified_choice"];
  std::string failed = JoinSpecs(choice.value("failed", json::array()));
  if (choice["spec"].is_null()) {
    return "<td class=\"fail\">no verified setting: none of its closest configurations passes</td><td>" + why +
           (failed.empty() ? std::string("none was verified") : "failed: <code>" + EscapeHtml(failed) + "</code>") +
           "</td>";
  }
  const bool exact = e.value("exact", false);
  if (!failed.empty()) failed = "; closer ones failed: <code>" + EscapeHtml(failed) + "</code>";
  // What the engine does silently to these settings (dropped scales, auto = fp8), beside its flags.
  std::string silently;
  for (const json& line : choice.value("silent_defaults", json::array())) {
    if (line.is_string()) silently += "<p class=\"warn\">silently: " + EscapeHtml(line.get<std::string>()) + "</p>";
  }
  return "<td>for <code>" + ValueSpan(d, r, base + "/verified_choice/spec", ValueFormat::kText) +
         "</code>:<pre class=\"copy\"><code>" +
         ValueSpan(d, r, base + "/verified_choice/command_example", ValueFormat::kText) + "</code></pre>" + silently +
         "</td><td>" + why + (exact ? std::string("") : "the closest configuration that passes (verified)" + failed) +
         "</td>";
}

std::string EngineRows(const RunDirectory& d, const ResultsFile& r, const std::string& choice) {
  const json* engines = Lookup(r, choice + "/deploy/engines");
  if (!engines || !engines->is_array()) return "";
  const json& verified = r.doc.value("verified", json::array());
  std::string out =
      "<table class=\"engines\"><thead><tr><th>engine</th><th>stores it exactly</th><th>settings</th>"
      "<th>otherwise</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < engines->size(); ++i) {
    const json& e = (*engines)[i];
    const std::string base = choice + Pointer({"deploy", "engines", std::to_string(i)});
    out += "<tr><td>" + ValueSpan(d, r, base + "/engine", ValueFormat::kText) + "</td><td>" +
           (e.value("exact", false) ? "yes" : "no") + "</td>" + SettingsCell(d, r, base, e, verified) + "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

std::string RecommendationBlock(const RunDirectory& d) {
  const ResultsFile& r = *d.recommend;
  std::string out = "<h4>Recommendation under the budget of " +
                    ValueSpan(d, r, "/budget/bytes_per_token", ValueFormat::kBytes) + " per token (policy " +
                    ValueSpan(d, r, "/policy", ValueFormat::kText) + ")</h4>\n";
  const json* rec = Lookup(r, "/recommended");
  std::string choice = "/recommended";
  if (!rec || rec->is_null()) {
    out += "<p class=\"fail\">Nothing under the budget passes.</p>\n";
    const json* cheapest = Lookup(r, "/cheapest_passing");
    if (!cheapest || cheapest->is_null())
      return out + "<p>No verified configuration above the budget passes either.</p>\n";
    choice = "/cheapest_passing";
    out += "<p>The cheapest verified configuration that passes, above the budget:</p>\n";
  }
  out += "<p class=\"recommended\"><code>" + ValueSpan(d, r, choice + "/spec", ValueFormat::kText) +
         "</code>: " + ValueSpan(d, r, choice + "/bytes_per_token", ValueFormat::kBytes) + " per token, " +
         ValueSpan(d, r, choice + "/f16_fraction", ValueFormat::kPercent) + " of f16, " +
         ValueSpan(d, r, choice + "/kv_gib_at_target", ValueFormat::kGib) + " at the target context.</p>\n";
  const json* uniform = Lookup(r, "/best_uniform");
  if (uniform && !uniform->is_null()) {
    out += "<p>Best uniform configuration (one K type, one V type): <code>" +
           ValueSpan(d, r, "/best_uniform/spec", ValueFormat::kText) + "</code>, " +
           ValueSpan(d, r, "/best_uniform/bytes_per_token", ValueFormat::kBytes) + " per token.</p>\n";
  }
  return out + EngineRows(d, r, choice);
}

std::string EvalOnly(const ReportContext& ctx, const RunDirectory& d) {
  const ResultsFile& e = *d.eval;
  std::string out = "<p>No policy was applied (an eval run). Safe context by the eval's own KLD threshold " +
                    ValueSpan(d, e, "/settings/kld_threshold", ValueFormat::kSig) + " nats:</p>\n";
  out +=
      "<table class=\"sortable\"><thead><tr><th>configuration</th><th>safe up to (tokens)</th></tr></thead><tbody>\n";
  const json& configs = e.doc.value("configs", json::array());
  for (size_t i = 0; i < configs.size(); ++i) {
    const std::string base = Pointer({"configs", std::to_string(i)});
    out += "<tr data-config=\"" + EscapeHtml(ctx.NameOf(d, configs[i].value("spec", ""))) + "\">" +
           ValueCell(d, e, base + "/spec", ValueFormat::kText) + SafeUpToCell(d, e, base) + "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

std::string VerdictBody(const ReportContext& ctx) {
  std::string out;
  for (const RunDirectory& d : ctx.dirs) {
    out += DirHeading(ctx, d, "");
    if (d.audit) {
      out += AuditTable(ctx, d);
    } else if (d.eval) {
      out += EvalOnly(ctx, d);
    }
    if (d.recommend) out += RecommendationBlock(d);
    if (!d.audit && !d.eval && !d.recommend)
      out += MissingNote("No verdict: these results hold no eval, audit or recommendation.");
  }
  return out;
}

}  // namespace

const Section kVerdictSection = {"verdict", "Verdict", "Verdict",
                                 "Each configuration judged by the acceptance policy against the baseline cache. "
                                 "Safe up to: the longest context length whose buckets, from the first, all pass. "
                                 "The settings below are the engines' own flags for the recommended cache.",
                                 VerdictBody};

}  // namespace kvaudit::report
