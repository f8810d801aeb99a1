// Section 5: which parts of the cache are sensitive, and what the memory buys. Per layer, K and V
// separately: the KLD when only that part is quantized (recommend's per-part costs, docs/decision.md
// "Recommend"; sensitivity's one-at-a-time runs when there is no recommendation). Then the
// Pareto front of bytes per token against predicted KLD per search shape, the points verified on
// held-out windows (pass/fail), the recommended one, and the budget.
#include <cmath>
#include <limits>
#include <map>

#include "report/html_escape.h"
#include "report/sections.h"
#include "report/svg_bar_chart.h"
#include "report/svg_scatter.h"
#include "report/value_ref.h"

namespace kvaudit::report {
namespace {

using nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// "L3.K" -> (3, 'K'); false when it is not a part name.
bool ParsePart(const std::string& part, int& layer, char& tensor) {
  if (part.size() < 4 || part[0] != 'L') return false;
  const size_t dot = part.find('.');
  if (dot == std::string::npos || dot + 2 != part.size()) return false;
  layer = std::atoi(part.substr(1, dot - 1).c_str());
  tensor = part[dot + 1];
  return tensor == 'K' || tensor == 'V';
}

BarChart PartChart(const std::string& id, const std::string& title, const std::string& y_label) {
  BarChart chart;
  chart.id = id, chart.title = title, chart.x_label = "layer", chart.y_label = y_label;
  chart.series_names = {"K", "V"};
  chart.log_y = true;
  return chart;
}

void Put(BarChart& chart, int layer, char tensor, double value) {
  while (static_cast<int>(chart.groups.size()) <= layer) {
    chart.groups.push_back({"L" + std::to_string(chart.groups.size()), {kNaN, kNaN}});
  }
  chart.groups[layer].values[tensor == 'K' ? 0 : 1] = value;
}

// recommend's parts[].costs: one chart per candidate format, and the estimated parts named.
std::string CostCharts(const RunDirectory& d) {
  std::map<std::string, BarChart> charts;
  std::map<std::string, std::string> estimated;
  for (const json& p : d.recommend->doc.value("parts", json::array())) {
    int layer = 0;
    char tensor = 'K';
    if (!ParsePart(p.value("part", ""), layer, tensor)) continue;
    for (const json& c : p.value("costs", json::array())) {
      const std::string cand = c.value("candidate", "?");
      auto it = charts
                    .try_emplace(cand, PartChart("sensitivity-" + std::to_string(d.index) + "-" + cand,
                                                 "KLD with only this part in " + cand, "mean KLD (nats, log scale)"))
                    .first;
      Put(it->second, layer, tensor, c.contains("kld") && c["kld"].is_number() ? c["kld"].get<double>() : kNaN);
      if (!c.value("measured", true)) estimated[cand] += (estimated[cand].empty() ? "" : ", ") + p.value("part", "");
    }
  }
  std::string out;
  for (auto& [cand, chart] : charts) {
    out += "<figure>" + RenderBarChart(chart) + "<figcaption>" + EscapeHtml(chart.title) + "</figcaption></figure>\n";
    if (!estimated[cand].empty()) {
      out += "<p class=\"note\">" + EscapeHtml(cand) +
             ": estimated, not measured end to end (split of the K-only/V-only "
             "KLD by proxy score): " +
             EscapeHtml(estimated[cand]) + ".</p>\n";
    }
  }
  return out;
}

// Without a recommendation: sensitivity's one-at-a-time KLD of the measured parts.
std::string OneAtATimeCharts(const RunDirectory& d) {
  std::string out;
  for (const json& f : d.sensitivity->doc.value("formats", json::array())) {
    const std::string format = f.value("format", "?");
    BarChart chart =
        PartChart("sensitivity-" + std::to_string(d.index) + "-" + format,
                  "KLD with only this part in " + format + " (measured parts)", "mean KLD (nats, log scale)");
    for (const json& p : f.value("parts", json::array())) {
      int layer = 0;
      char tensor = 'K';
      if (!ParsePart(p.value("part", ""), layer, tensor)) continue;
      const json& one = p.contains("one_at_a_time") ? p["one_at_a_time"] : json();
      Put(chart, layer, tensor, one.is_object() && one.contains("kld_mean") ? one["kld_mean"].get<double>() : kNaN);
    }
    out += "<figure>" + RenderBarChart(chart) + "<figcaption>" + EscapeHtml(chart.title) + "</figcaption></figure>\n";
  }
  return out;
}

ScatterPoint::Mark MarkOf(const json& v, const std::string& recommended) {
  if (v.value("spec", "") == recommended) return ScatterPoint::Mark::kRecommended;
  return v.value("pass", false) ? ScatterPoint::Mark::kVerifiedPass : ScatterPoint::Mark::kVerifiedFail;
}

std::string Pareto(const ReportContext& ctx, const RunDirectory& d) {
  const json& r = d.recommend->doc;
  Scatter plot;
  plot.id = "pareto-" + std::to_string(d.index);
  plot.title = "Bytes per token against KLD";
  plot.x_label = "cache bytes per token (log scale)";
  plot.log_x = true;  // the points that matter crowd near the budget, far below f32's bytes
  plot.y_label = "mean KLD (nats, log scale)";
  if (r.contains("budget") && r["budget"].contains("bytes_per_token")) {
    plot.x_marker = r["budget"]["bytes_per_token"].get<double>();
    plot.x_marker_label = "budget";
  }
  int color = static_cast<int>(ctx.eval_configs.size());
  for (const json& f : r.value("fronts", json::array())) {
    ScatterSeries s;
    s.name = "front: " + f.value("shape", "?") + " (predicted)";
    s.color = color++ % 8;
    for (const json& p : f.value("points", json::array())) {
      s.points.push_back(
          {p.value("bytes_per_token", kNaN), p.value("predicted_kld", kNaN), "", ScatterPoint::Mark::kFront});
    }
    plot.series.push_back(std::move(s));
  }
  const json* rec = r.contains("recommended") && r["recommended"].is_object() ? &r["recommended"] : nullptr;
  const std::string recommended = rec ? rec->value("spec", "") : "";
  ScatterSeries held{"verified (held-out KLD)", 0, false, {}},
      engines{"engines' approximations (held-out KLD)", 7, false, {}};
  for (const json& v : r.value("verified", json::array())) {
    const double kld =
        v.contains("held_out") && v["held_out"].is_object() ? v["held_out"].value("kld_mean", kNaN) : kNaN;
    ScatterSeries& s = v.value("round", 1) == 3 ? engines : held;
    s.points.push_back({v.value("bytes_per_token", kNaN), kld, v.value("spec", ""), MarkOf(v, recommended)});
  }
  plot.series.push_back(std::move(held));
  if (!engines.points.empty()) plot.series.push_back(std::move(engines));
  return "<figure>" + RenderScatter(plot) + "<figcaption>Pareto front and verified points</figcaption></figure>\n";
}

std::string VerifiedTable(const RunDirectory& d) {
  const ResultsFile& r = *d.recommend;
  std::string out =
      "<table class=\"sortable\" id=\"verified-" + std::to_string(d.index) +
      "\"><thead><tr><th>configuration</th><th>round</th><th>bytes/token</th><th>predicted KLD</th>"
      "<th>held-out KLD</th><th>worst bucket KLD</th><th>top-1 agree</th><th>verdict</th><th>safe up to</th>"
      "<th>first failure</th></tr></thead><tbody>\n";
  const json& verified = r.doc.value("verified", json::array());
  for (size_t i = 0; i < verified.size(); ++i) {
    const std::string b = Pointer({"verified", std::to_string(i)});
    out +=
        "<tr>" + ValueCell(d, r, b + "/spec", ValueFormat::kText) + ValueCell(d, r, b + "/round", ValueFormat::kInt) +
        ValueCell(d, r, b + "/bytes_per_token", ValueFormat::kBytes) +
        ValueCell(d, r, b + "/predicted_kld", ValueFormat::kSig) +
        ValueCell(d, r, b + "/held_out/kld_mean", ValueFormat::kSig) +
        ValueCell(d, r, b + "/held_out/worst_bucket/kld_mean", ValueFormat::kSig) +
        ValueCell(d, r, b + "/held_out/top1_agree", ValueFormat::kPercent) +
        ValueCell(d, r, b + "/pass", ValueFormat::kPassFail) + ValueCell(d, r, b + "/safe_up_to", ValueFormat::kText) +
        ValueCell(d, r, b + "/first_failure", ValueFormat::kText) + "</tr>\n";
  }
  return out +
         "</tbody></table>\n<p class=\"note\">Round 1: under the budget; 2: above it (only when nothing under it "
         "passes); 3: what engines that cannot store the choice run instead.</p>\n";
}

std::string SensitivityBody(const ReportContext& ctx) {
  return PerDirectory(
      ctx, [](const RunDirectory& d) { return d.recommend || d.sensitivity; },
      [&](const RunDirectory& d) {
        return DirHeading(ctx, d, "") +
               (d.recommend ? CostCharts(d) + Pareto(ctx, d) + VerifiedTable(d) : OneAtATimeCharts(d));
      },
      "No sensitivity or recommendation in these results; hint: kvaudit audit --budget B (or kvaudit recommend).");
}

}  // namespace

const Section kSensitivitySection = {
    "sensitivity", "Sensitivity", "Sensitivity and the memory/fidelity front",
    "Bars: the KLD when only that layer's K (or V) is quantized; the tallest bars are the parts to keep in "
    "higher precision. Front: the best predicted KLD for each number of bytes per token (sum of per-part costs); "
    "squares passed the policy on held-out windows, crosses failed, the star is the recommendation; the dashed "
    "line is the budget.",
    SensitivityBody};

}  // namespace kvaudit::report
