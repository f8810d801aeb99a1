// Section 2: memory against fidelity, one row per configuration: what it costs (bytes per token,
// the share of an f16 cache, GiB at the target context) beside what it changes (mean KLD with its
// 95% bootstrap interval, p99, top-1 agreement, ΔPPL, the safe context). Sortable by any column.
#include "report/html_escape.h"
#include "report/sections.h"
#include "report/value_ref.h"

namespace kvaudit::report {
namespace {

using nlohmann::json;

std::string Row(const ReportContext& ctx, const ConfigView& c) {
  const RunDirectory& d = *c.dir;
  const ResultsFile& e = *d.eval;
  const std::string base = Pointer({"configs", std::to_string(c.index)});
  const std::string audit = AuditConfigPointer(d, c.spec);
  std::string row = "<tr data-config=\"" + EscapeHtml(c.name) + "\">";
  if (ctx.compare) row += "<td>" + EscapeHtml(d.label) + "</td>";
  row += "<td class=\"spec\" data-sort=\"" + EscapeHtml(c.spec) + "\"><span class=\"swatch c" +
         std::to_string(c.color % 8) + "\"></span>" + ValueSpan(d, e, base + "/spec", ValueFormat::kText) + "</td>";
  if (!audit.empty()) {
    // The audit's bytes are at its target context (sliding-window layers holding their window,
    // docs/deployment.md "kvaudit's own accounting"), the eval's hold every position.
    row += ValueCell(d, *d.audit, audit + "/bytes_per_token", ValueFormat::kBytes) +
           ValueCell(d, *d.audit, audit + "/f16_fraction", ValueFormat::kPercent) +
           ValueCell(d, *d.audit, audit + "/kv_gib_at_target", ValueFormat::kGib);
  } else {
    row += ValueCell(d, e, base + "/bytes_per_token", ValueFormat::kBytes) +
           "<td data-sort=\"\">–</td><td data-sort=\"\">–</td>";
  }
  row += ValueCell(d, e, base + "/overall/kld_mean", ValueFormat::kSig);
  row += "<td data-sort=\"\">[" + ValueSpan(d, e, base + "/overall/kld_ci95/0", ValueFormat::kSig) + ", " +
         ValueSpan(d, e, base + "/overall/kld_ci95/1", ValueFormat::kSig) + "]</td>";
  row += ValueCell(d, e, base + "/overall/kld_p99", ValueFormat::kSig) +
         ValueCell(d, e, base + "/overall/top1_agree", ValueFormat::kPercent) +
         ValueCell(d, e, base + "/overall/delta_ppl", ValueFormat::kSig) +
         ValueCell(d, e, base + "/overall/ppl_ratio", ValueFormat::kSig);
  // Where an audit judged the configuration, its safe context is the policy's (the verdict's);
  // otherwise the eval's own, by its KLD threshold. The two differ when the thresholds do.
  const ResultsFile& judged = audit.empty() ? e : *d.audit;
  const std::string at = audit.empty() ? base : audit;
  row += SafeUpToCell(d, judged, at);
  return row + "</tr>\n";
}

std::string MemoryBody(const ReportContext& ctx) {
  std::string out;
  if (ctx.eval_configs.empty()) {
    for (const RunDirectory& d : ctx.dirs)
      out += DirHeading(ctx, d, "") + MissingNote("No eval results in " + d.path +
                                                  ": nothing to tabulate; hint: kvaudit eval or kvaudit audit.");
    return out;
  }
  out += "<table class=\"sortable\" id=\"memory-table\"><thead><tr>";
  if (ctx.compare) out += "<th>run</th>";
  out +=
      "<th>configuration</th><th>bytes/token</th><th>of f16</th><th>KV GiB at target</th><th>mean KLD (nats)</th>"
      "<th>95% CI</th><th>KLD p99</th><th>top-1 agree</th><th>ΔPPL</th><th>PPL ratio</th><th>safe up to (tokens)</th>"
      "</tr></thead><tbody>\n";
  for (const ConfigView& c : ctx.eval_configs) out += Row(ctx, c);
  out += "</tbody></table>\n";
  for (const RunDirectory& d : ctx.dirs) {
    if (d.eval) {
      out += "<p class=\"note\">" + (ctx.compare ? EscapeHtml(d.label) + ": " : std::string()) + "baseline <code>" +
             ValueSpan(d, *d.eval, "/baseline/spec", ValueFormat::kText) + "</code>, PPL " +
             ValueSpan(d, *d.eval, "/baseline/ppl", ValueFormat::kSig) + "; " +
             ValueSpan(d, *d.eval, "/data/windows", ValueFormat::kInt) + " windows of " +
             ValueSpan(d, *d.eval, "/ctx", ValueFormat::kInt) + " tokens. Safe up to: " +
             (d.audit ? std::string("the policy's verdict (section 1).")
                      : "every bucket from the first has mean KLD ≤ " +
                            ValueSpan(d, *d.eval, "/settings/kld_threshold", ValueFormat::kSig) +
                            " (the eval's threshold).") +
             "</p>\n";
    }
  }
  return out;
}

}  // namespace

const Section kMemorySection = {
    "memory", "Memory", "Memory against fidelity",
    "Cost and damage side by side. KLD: mean KL(baseline ‖ configuration) per scored position, in nats, "
    "with its 95% bootstrap interval over windows; top-1: share of positions with the baseline's most likely "
    "token; ΔPPL: perplexity minus the baseline's. Click a column to sort.",
    MemoryBody};

}  // namespace kvaudit::report
