// Section 4: where in the model the cache's error is, per layer (rows) and KV head (columns), from
// eval's attention diagnosis (configs[].attention: each layer's own error on the baseline's
// queries, nothing compounded; docs/metrics.md). One heatmap per configuration and quantity, every
// configuration of a quantity on one shared colour scale, so a darker cell is worse everywhere.
#include <algorithm>
#include <cmath>
#include <limits>

#include "report/html_escape.h"
#include "report/sections.h"
#include "report/svg_heatmap.h"

namespace kvaudit::report {
namespace {

using nlohmann::json;

struct Quantity {
  const char* field;
  const char* label;
};
constexpr Quantity kQuantities[] = {
    {"out_rel_err", "attention-output relative error"},
    {"k_rel_err", "K relative error"},
    {"v_rel_err", "V relative error"},
    {"attn_kl", "attention KL (nats)"},
};

struct Shape {
  int layers = 0, heads = 0;
};

Shape ShapeOf(const json& cells) {
  Shape s;
  for (const json& c : cells) {
    s.layers = std::max(s.layers, c.value("layer", -1) + 1);
    s.heads = std::max(s.heads, c.value("kv_head", -1) + 1);
  }
  return s;
}

// [layers, heads] row-major; NaN where the diagnosis has no cell.
std::vector<double> HeadGrid(const json& cells, const Shape& s, const char* field) {
  std::vector<double> v(static_cast<size_t>(s.layers) * s.heads, std::numeric_limits<double>::quiet_NaN());
  for (const json& c : cells) {
    const int l = c.value("layer", -1), h = c.value("kv_head", -1);
    if (l < 0 || h < 0 || !c.contains(field) || !c[field].is_number()) continue;
    v[static_cast<size_t>(l) * s.heads + h] = c[field].get<double>();
  }
  return v;
}

const json& CellsOf(const ConfigView& c) {
  static const json empty = json::array();
  const json& cfg = c.dir->eval->doc["configs"][c.index];
  return cfg.contains("attention") && cfg["attention"].is_array() ? cfg["attention"] : empty;
}

std::string QuantityRow(const ReportContext& ctx, const Quantity& q) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const ConfigView& c : ctx.eval_configs) {
    for (double x : HeadGrid(CellsOf(c), ShapeOf(CellsOf(c)), q.field)) {
      if (!std::isfinite(x)) continue;
      hi = std::max(hi, x);
      if (x > 0) lo = std::min(lo, x);
    }
  }
  if (hi <= 0 || !std::isfinite(lo))
    return "<h3>" + EscapeHtml(q.label) + "</h3>" + MissingNote("All zero or not measured.");
  const bool log_scale = hi / lo > 100;
  const double vmin = log_scale ? lo : 0;
  std::string out = "<h3>" + EscapeHtml(q.label) + "</h3>\n<div class=\"heatmaps\">";
  for (const ConfigView& c : ctx.eval_configs) {
    const json& cells = CellsOf(c);
    Heatmap map;
    const Shape s = ShapeOf(cells);
    map.id = "attn-" + std::string(q.field) + "-" + std::to_string(c.color);
    // No title inside the map: two KV heads make it narrower than a spec; the caption names it.
    for (int l = 0; l < s.layers; ++l) map.row_labels.push_back("L" + std::to_string(l));
    for (int h = 0; h < s.heads; ++h) map.col_labels.push_back("h" + std::to_string(h));
    map.values = HeadGrid(cells, s, q.field);
    map.vmin = vmin, map.vmax = hi, map.log_scale = log_scale, map.value_label = q.label;
    out += "<figure class=\"heatmap\" data-config=\"" + EscapeHtml(c.name) + "\">" + RenderHeatmap(map) +
           "<figcaption>" + EscapeHtml(c.name) + "</figcaption></figure>";
  }
  return out + "<figure class=\"scale\">" + RenderColorScale(vmin, hi, log_scale, q.label) + "</figure></div>\n";
}

std::string AttentionBody(const ReportContext& ctx) {
  bool any = false;
  for (const ConfigView& c : ctx.eval_configs) any = any || !CellsOf(c).empty();
  if (!any) {
    return MissingNote(ctx.eval_configs.empty()
                           ? "No eval results: no attention diagnosis; hint: kvaudit eval or kvaudit audit."
                           : "The eval ran with --attn-samples 0: no attention diagnosis.");
  }
  std::string out;
  for (const Quantity& q : kQuantities) out += QuantityRow(ctx, q);
  return out;
}

}  // namespace

const Section kAttentionSection = {
    "attention", "Layers &amp; heads", "Attention diagnosis by layer and KV head",
    "Rows are layers, columns KV heads; each cell is that head's own error at sampled query positions, measured on "
    "the baseline's queries so nothing upstream is compounded. Attention-output error is what the next layer sees; "
    "K error moves the attention weights (attention KL), V error moves the output directly. Grey hatched: not "
    "measured. One colour scale per row of maps.",
    AttentionBody};

}  // namespace kvaudit::report
