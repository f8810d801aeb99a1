// Section 3: fidelity against context length, one line per configuration: mean KLD per context
// bucket with its 95% bootstrap band, and top-1 agreement, on a log2 axis of context length, with
// the policy's threshold drawn (the audit's policy; for an eval run, its --kld-threshold).
#include <cmath>
#include <limits>
#include <optional>

#include "decide/acceptance/policy.h"
#include "report/html_escape.h"
#include "report/number_format.h"
#include "report/sections.h"
#include "report/svg_line_chart.h"

namespace kvaudit::report {
namespace {

using nlohmann::json;

double NumOr(const json& j, const char* key, double fallback) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

struct Threshold {
  std::optional<double> value;
  std::string label;
};

// The limit a policy sets on a metric, from the first directory that names a policy it can load.
Threshold PolicyThreshold(const ReportContext& ctx, FidelityMetric metric, const char* what) {
  for (const RunDirectory& d : ctx.dirs) {
    const ResultsFile* f = d.audit ? &*d.audit : d.recommend ? &*d.recommend : nullptr;
    if (!f || !f->doc.contains("policy") || !f->doc["policy"].is_string()) continue;
    const std::string name = f->doc["policy"].get<std::string>();
    Expected<AcceptancePolicy> policy = LoadPolicy(name);
    if (!policy || !policy->fidelity[metric]) continue;
    return {*policy->fidelity[metric],
            std::string("policy ") + name + ": " + what + " " + FormatSig(*policy->fidelity[metric], 4)};
  }
  if (metric == FidelityMetric::kKldMean) {
    for (const RunDirectory& d : ctx.dirs) {
      if (!d.eval) continue;
      const json& s = d.eval->doc.value("settings", json::object());
      if (s.contains("kld_threshold") && s["kld_threshold"].is_number()) {
        return {s["kld_threshold"].get<double>(),
                "eval --kld-threshold " + FormatSig(s["kld_threshold"].get<double>(), 4)};
      }
    }
  }
  return {};
}

LineSeries SeriesOf(const ConfigView& c, const char* field, bool with_band) {
  LineSeries s;
  s.name = c.name, s.color = c.color;
  const json& buckets = c.dir->eval->doc["configs"][c.index].value("buckets", json::array());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const json& b : buckets) {
    s.x.push_back(NumOr(b, "measured_to", NumOr(b, "to", nan)));
    s.y.push_back(NumOr(b, field, nan));
    if (!with_band) continue;
    const bool ci = b.contains("kld_ci95") && b["kld_ci95"].is_array() && b["kld_ci95"].size() == 2 &&
                    b["kld_ci95"][0].is_number() && b["kld_ci95"][1].is_number();
    s.lo.push_back(ci ? b["kld_ci95"][0].get<double>() : nan);
    s.hi.push_back(ci ? b["kld_ci95"][1].get<double>() : nan);
  }
  return s;
}

std::string Chart(const ReportContext& ctx, const char* id, const char* title, const char* y_label, const char* field,
                  bool band, bool log_y, const Threshold& t) {
  LineChart chart;
  chart.id = id, chart.title = title, chart.x_label = "context length (tokens, log scale)", chart.y_label = y_label;
  chart.x_scale = LineChart::XScale::kLog2;
  chart.log_y = log_y;
  chart.threshold = t.value, chart.threshold_label = t.label;
  for (const ConfigView& c : ctx.eval_configs) chart.series.push_back(SeriesOf(c, field, band));
  return "<figure>" + RenderLineChart(chart) + "<figcaption>" + EscapeHtml(title) + "</figcaption></figure>\n";
}

std::string CurvesBody(const ReportContext& ctx) {
  if (ctx.eval_configs.empty()) return MissingNote("No eval results: no curves; hint: kvaudit eval or kvaudit audit.");
  return Chart(ctx, "kld-vs-context", "Mean KLD by context length", "mean KLD (nats, log scale)", "kld_mean", true,
               true, PolicyThreshold(ctx, FidelityMetric::kKldMean, "kld_mean_max")) +
         Chart(ctx, "top1-vs-context", "Top-1 agreement by context length", "top-1 agreement (fraction)", "top1_agree",
               false, false, PolicyThreshold(ctx, FidelityMetric::kTop1Agree, "top1_agree_min"));
}

}  // namespace

const Section kCurvesSection = {
    "curves", "By context", "Fidelity by context length",
    "Each point is a context-length bucket (positions grouped by how much context they saw), drawn at the longest "
    "context it holds. Shaded: the 95% bootstrap interval of the bucket's mean KLD (eval computes no interval for "
    "top-1 per bucket). Dashed: the policy's limit. "
    "A curve that rises with context is error the cache compounds; where it crosses the limit is where the "
    "configuration stops being safe. Hover a point for its value; the legend's checkboxes above hide lines.",
    CurvesBody};

}  // namespace kvaudit::report
