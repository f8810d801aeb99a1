#include "decide/audit/served_search_report.h"

#include <algorithm>

#include "base/text_columns.h"
#include "decide/recommend/recommend_report.h"
#include "run/provenance.h"

namespace kvaudit {
namespace {

using nlohmann::json;

double F16Share(uint64_t bytes, const ServedSearchPlan& plan) {
  return static_cast<double>(bytes) / static_cast<double>(plan.f16_bytes_per_token);
}

json CandidateJson(const ServedCandidate& c, const ServedSearchPlan& plan) {
  const ConfigVerdict* v = c.verdict ? &*c.verdict : nullptr;
  const bool failed = v && v->first_failure;
  return {{"spec", c.spec},
          {"k", c.k},
          {"v", c.v},
          {"bytes_per_token", c.bytes_per_token},
          {"f16_fraction", F16Share(c.bytes_per_token, plan)},
          {"state", c.state},
          {"dir", c.dir.empty() ? json(nullptr) : json(c.dir)},
          {"endpoint", c.endpoint},
          {"reported_cache", c.reported ? c.reported->ToJson() : json(nullptr)},
          {"reported_differs", c.reported_differs.empty() ? json(nullptr) : json(c.reported_differs)},
          {"verdict", v ? json(OutcomeWord(v->outcome)) : json(nullptr)},
          {"pass", v ? json(v->pass) : json(nullptr)},
          {"safe_up_to", v ? json(SafeUpToText(*v)) : json(nullptr)},
          {"first_failure", failed ? json(v->cases[*v->first_failure].text) : json(nullptr)},
          {"wall_s", c.dir.empty() ? json(nullptr) : json(c.wall_s)}};
}

// The frozen baseline: {path, positions, top_k, bytes}, or null when nothing was measured.
json ReferenceJson(const ServedSearchResult& r) {
  if (!r.reference) return nullptr;
  return {{"path", r.reference->path},
          {"positions", r.reference->positions},
          {"top_k", r.reference->top_k},
          {"bytes", r.reference->bytes}};
}

}  // namespace

json ServedSearchJson(const ServedSearchResult& r, const ServedSearchPlan& plan) {
  const RecommendOptions& o = plan.options;
  json candidates = json::array();
  for (const ServedCandidate& c : r.candidates) candidates.push_back(CandidateJson(c, plan));
  json j = {{"kind", "recommend"},
            {"schema_version", kRecommendSchemaVersion},
            {"search", "servers"},
            {"model", o.model},
            {"serve_cmd", o.serve_cmd},
            {"baseline", {{"spec", plan.baseline.spec()}, {"log", r.baseline_log}, {"reference", ReferenceJson(r)}}},
            {"target", o.target},
            {"policy", plan.policy.name},
            {"target_context", plan.target_ctx},
            {"budget", {{"text", plan.budget.text}, {"bytes_per_token", plan.budget_bytes_per_token}}},
            {"f16_bytes_per_token", plan.f16_bytes_per_token},
            {"one_type", plan.one_type},
            {"measured_on",
             {{"data", o.data},
              {"ctx", o.ctx},
              {"first_window", o.first_window},
              {"windows", o.windows},
              {"probe_families", plan.probe_families},
              {"probe_lengths", plan.probe_lengths},
              {"probe_n", o.probe_n}}},
            {"bounds", {{"max_servers", o.max_servers}, {"search_time_s", o.search_time_s}}},
            {"candidates", candidates},
            {"recommended", r.recommended ? json(r.candidates[*r.recommended].spec) : json(nullptr)},
            {"deploy_command", r.recommended ? json(r.deploy_command) : json(nullptr)},
            {"servers_logs", r.logs_dir},
            {"run", {{"threads", o.threads}, {"wall_s", r.wall_s}, {"peak_rss_mb", r.peak_rss_mb}}}};
  j["run"].update(ProvenanceJson());
  return j;
}

namespace {

std::string CandidateLine(const ServedCandidate& c, const ServedSearchPlan& plan) {
  std::string what = c.verdict ? VerdictLine(*c.verdict) : "not measured (" + c.state + ")";
  if (!c.reported_differs.empty()) what += " (" + c.reported_differs + ")";
  return "  " + PadColumn(c.spec, 34) + PadColumn(std::to_string(c.bytes_per_token), 12) +
         PadColumn(FormatNumber("%.3f", F16Share(c.bytes_per_token, plan)), 9) + what + "\n";
}

// Why nothing is recommended, in one line.
std::string NoneText(const ServedSearchResult& r) {
  for (const ServedCandidate& c : r.candidates) {
    if (c.state == "--max-servers reached" || c.state == "--search-time reached") {
      return "none yet: every candidate measured failed, and " + c.state +
             " before the others; hint: raise it, or rerun with a larger budget's candidates only (--formats)";
    }
  }
  const bool refused = std::any_of(r.candidates.begin(), r.candidates.end(), [](const ServedCandidate& c) {
    return c.state.starts_with("its server did not start");
  });
  return std::string("none: every candidate under the budget ") +
         (refused ? "fails the policy or did not start (its log is in the servers' logs)" : "fails the policy") +
         "; hint: raise --budget or give more precise types in --formats";
}

}  // namespace

std::string ServedSearchText(const ServedSearchResult& r, const ServedSearchPlan& plan) {
  const RecommendOptions& o = plan.options;
  std::string out = "=== kvaudit recommend through servers: " + o.model + "\n";
  out += "policy " + plan.policy.name + " at " + std::to_string(plan.target_ctx) + " tokens; --budget " +
         plan.budget.text + " = " + std::to_string(plan.budget_bytes_per_token) +
         " bytes per token (f16: " + std::to_string(plan.f16_bytes_per_token) + "); --target " + o.target + "\n";
  const std::string frozen = r.reference ? " (its eval answers frozen once: " + r.reference->path + ")" : "";
  out += "baseline " + plan.baseline.spec() + " on its own server" + frozen + "; " + std::to_string(o.windows) +
         " windows of " + std::to_string(o.ctx) + " tokens from window " + std::to_string(o.first_window) +
         "; probes: " +
         (plan.probe_families.empty() ? "none (the policy names none)" : JoinWith(plan.probe_families, ", ")) + "\n";
  out += "searched cheapest first, one server per candidate (" +
         std::string(plan.one_type ? "one type for K and V: the template has no {v}" : "-ctk/-ctv grid") + "):\n";
  out += "  " + PadColumn("candidate", 34) + PadColumn("bytes/tok", 12) + PadColumn("of f16", 9) + "verdict\n";
  for (const ServedCandidate& c : r.candidates) out += CandidateLine(c, plan);
  if (r.recommended) {
    const ServedCandidate& c = r.candidates[*r.recommended];
    out += "recommended: " + c.spec + " (" + std::to_string(c.bytes_per_token) + " bytes per token, " +
           FormatNumber("%.3f", F16Share(c.bytes_per_token, plan)) +
           " of f16): the cheapest that passes; every cheaper candidate was measured and failed\n";
    out += "deploy: " + r.deploy_command + "\n";
  } else {
    out += "recommended: " + NoneText(r) + "\n";
  }
  out += "servers' logs: " + r.logs_dir + "\n";
  return out;
}

}  // namespace kvaudit
