// Section 6: what the workload probes found. Needle grids (context length × needle depth) per
// configuration beside the baseline's, cells coloured by pass rate and marked where the cache
// caused the failure (baseline right, configuration wrong); then the attribution tables, pooled
// per family and per cell, with McNemar's exact p-values, Holm-corrected, in words
// (docs/probes.md).
#include <map>
#include <set>
#include <tuple>

#include "report/html_escape.h"
#include "report/number_format.h"
#include "report/palette.h"
#include "report/sections.h"
#include "report/value_ref.h"

namespace kvaudit::report {
namespace {

using nlohmann::json;

struct NeedleCell {
  double passed = 0, n = 0;  // pass count and instances, pooled over variants
  int cache_induced = 0;
};
// (length, depth) -> cell, for one configuration or the baseline.
using NeedleGrid = std::map<std::pair<int, int>, NeedleCell>;

std::map<std::string, NeedleGrid> NeedleGrids(const json& probes, const std::string& baseline_key) {
  std::map<std::string, NeedleGrid> grids;
  std::set<std::tuple<int, int, std::string>> baseline_seen;  // the baseline counted once per (cell, variant)
  for (const json& p : probes) {
    if (p.value("family", "") != "needle" || !p["depth"].is_number()) continue;
    const std::pair<int, int> at{p.value("length", 0), p["depth"].get<int>()};
    const double n = p.value("n", 0);
    NeedleCell& c = grids[p.value("config", "?")][at];
    c.passed += p.value("config_pass", 0.0) * n, c.n += n, c.cache_induced += p.value("cache_induced", 0);
    if (baseline_seen.insert({at.first, at.second, p.value("variant", "")}).second) {
      NeedleCell& b = grids[baseline_key][at];
      b.passed += p.value("baseline_pass", 0.0) * n, b.n += n;
    }
  }
  return grids;
}

std::string GridTable(const std::string& title, const NeedleGrid& grid) {
  std::set<int> lengths, depths;
  for (const auto& [at, c] : grid) lengths.insert(at.first), depths.insert(at.second);
  std::string out = "<figure class=\"needles\" data-config=\"" + EscapeHtml(title) +
                    "\"><table class=\"grid\"><caption>" + EscapeHtml(title) +
                    "</caption><thead><tr><th>length \\ depth</th>";
  for (int d : depths) out += "<th>" + std::to_string(d) + " %</th>";
  out += "</tr></thead><tbody>\n";
  for (int l : lengths) {
    out += "<tr><th>" + FormatContext(l) + "</th>";
    for (int d : depths) {
      auto it = grid.find({l, d});
      if (it == grid.end() || it->second.n == 0) {
        out += "<td class=\"na\">–</td>";
        continue;
      }
      const NeedleCell& c = it->second;
      const double rate = c.passed / c.n;
      const std::string mark = c.cache_induced ? " ✕" + std::to_string(c.cache_induced) : "";
      out += "<td style=\"background:" + SequentialColor(rate) + ";color:" + (rate > 0.55 ? "#000" : "#fff") +
             "\" data-pass=\"" + FormatSig(rate, 6) + "\" data-cache-induced=\"" + std::to_string(c.cache_induced) +
             "\" title=\"" + FormatFixed(c.passed, 0) + " of " + FormatFixed(c.n, 0) + " passed\">" +
             FormatFixed(100 * rate, 0) + "%" + mark + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table></figure>";
}

std::string VerdictWords(const json& r) {
  const int induced = r.value("cache_induced", 0), recovered = r.value("recovered", 0),
            both_fail = r.value("both_fail", 0);
  std::string words;
  if (induced == 0 && recovered == 0) {
    words = "same outcomes as the baseline";
  } else if (induced > 0) {
    words = std::to_string(induced) + " failure" + (induced > 1 ? "s" : "") + " caused by the cache";
    words +=
        r.value("significant", false) ? ": significant after Holm's correction" : ": not significant (could be chance)";
    if (recovered > 0) words += "; " + std::to_string(recovered) + " passed only with the cache";
  } else {
    words = std::to_string(recovered) + " passed only with the cache (noise, not damage)";
  }
  if (both_fail > 0) words += "; " + std::to_string(both_fail) + " failed with the baseline too (the model's limit)";
  return words;
}

// cells: the per-cell rows (variant, length, depth), of which only those where the configuration and
// the baseline differ on some instance are listed: a default probe run has ~100 cells per
// configuration, nearly all alike, and the needle grids above already show every cell.
std::string AttributionTable(const RunDirectory& d, const ResultsFile& f, const char* key, bool cells) {
  std::string out =
      std::string("<table class=\"sortable attribution\" id=\"") + key + "-" + std::to_string(d.index) +
      "\"><thead><tr><th>family</th>" + (cells ? "<th>variant</th><th>length</th><th>depth</th>" : "") +
      "<th>configuration</th><th>n</th><th>baseline pass</th><th>configuration pass</th><th>cache-induced</th>"
      "<th>McNemar p</th><th>Holm p</th><th>verdict</th></tr></thead><tbody>\n";
  const json& rows = f.doc.value(key, json::array());
  size_t alike = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (cells && rows[i].value("cache_induced", 0) == 0 && rows[i].value("recovered", 0) == 0) {
      ++alike;
      continue;
    }
    const std::string b = Pointer({key, std::to_string(i)});
    out += "<tr>" + ValueCell(d, f, b + "/family", ValueFormat::kText);
    if (cells) {
      out += ValueCell(d, f, b + "/variant", ValueFormat::kText) + ValueCell(d, f, b + "/length", ValueFormat::kInt) +
             ValueCell(d, f, b + "/depth", ValueFormat::kInt);
    }
    out += ValueCell(d, f, b + "/config", ValueFormat::kText) + ValueCell(d, f, b + "/n", ValueFormat::kInt) +
           ValueCell(d, f, b + "/baseline_pass", ValueFormat::kPercent) +
           ValueCell(d, f, b + "/config_pass", ValueFormat::kPercent) +
           ValueCell(d, f, b + "/cache_induced", ValueFormat::kInt) +
           ValueCell(d, f, b + "/mcnemar_p", ValueFormat::kSig) +
           ValueCell(d, f, b + "/mcnemar_p_holm", ValueFormat::kSig) + "<td>" + EscapeHtml(VerdictWords(rows[i])) +
           "</td></tr>\n";
  }
  out += "</tbody></table>\n";
  if (alike > 0) {
    out += "<p class=\"note\">" + std::to_string(alike) + " of " + std::to_string(rows.size()) +
           " cells are not listed: there the configuration and the baseline agree on every instance.</p>\n";
  }
  return out;
}

std::string ProbeDirSection(const ReportContext& ctx, const RunDirectory& d) {
  const ResultsFile& f = *d.probe;
  const std::string baseline = "baseline " + f.doc.value("baseline", std::string("?"));
  std::map<std::string, NeedleGrid> grids = NeedleGrids(f.doc.value("probes", json::array()), baseline);
  std::string out = DirHeading(ctx, d, "");
  if (grids.empty()) {
    out += MissingNote("No needle probes in this run.");
  } else {
    out += "<h3>Needle grids: pass rate by context length and depth</h3>\n<div class=\"grids\">" +
           GridTable(baseline, grids[baseline]);
    for (const json& c : f.doc.value("configs", json::array())) {
      const std::string spec = c.value("spec", "?");
      if (grids.count(spec)) out += GridTable(ctx.NameOf(d, spec), grids[spec]);
    }
    out += "</div>\n<p class=\"note\">✕N: N instances the baseline answered and this configuration did not.</p>\n";
  }
  out += "<h3>Attribution, pooled per family</h3>\n" + AttributionTable(d, f, "pooled", false);
  out += "<h3>Attribution per cell, where the configuration and the baseline differ</h3>\n" +
         AttributionTable(d, f, "probes", true);
  return out;
}

std::string ProbesBody(const ReportContext& ctx) {
  return PerProbeDirectory(ctx, [&](const RunDirectory& d) { return ProbeDirSection(ctx, d); });
}

}  // namespace

const Section kProbesSection = {
    "probes", "Probes", "Workload probes",
    "Needles, exact copies and constraints run under the baseline and under each configuration on the same "
    "prompts. A failure counts against the cache only when the baseline passed the same instance (cache-induced); "
    "when both fail it is the model's limit. McNemar's exact test compares the paired outcomes; Holm's correction "
    "accounts for the many cells.",
    ProbesBody};

}  // namespace kvaudit::report
