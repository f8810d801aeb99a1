#include "report/svg_bar_chart.h"

#include <algorithm>
#include <cmath>

#include "report/html_escape.h"
#include "report/number_format.h"
#include "report/palette.h"
#include "report/svg_doc.h"
#include "report/svg_plot.h"

namespace kvaudit::report {
namespace {

constexpr double kGroupFill = 0.8;  // the share of a group's width its bars take
constexpr double kStub = 3;         // the height of a not-measured bar, px

double ValueOf(const BarGroup& g, size_t s) { return s < g.values.size() ? g.values[s] : NAN; }

std::string Bar(const BarChart& c, size_t gi, size_t si, const XyFrame& f, const YPlan& yp) {
  const BarGroup& g = c.groups[gi];
  const double v = ValueOf(g, si);
  const size_t n = c.series_names.size();
  const double group_w = f.area.width / static_cast<double>(c.groups.size());
  const double bar_w = group_w * kGroupFill / static_cast<double>(n);
  const double x =
      f.area.left + group_w * (static_cast<double>(gi) + (1 - kGroupFill) / 2) + bar_w * static_cast<double>(si);
  // Bars start at 0 on a linear axis and at the axis bottom on a log one.
  const double base = yp.kind == ScaleKind::kLinear ? f.y.Map(0) : f.area.bottom();
  // NaN is not measured (a 3 px grey mark); ±inf runs to the edge of the area it points at.
  const bool measured = !std::isnan(v);
  const double top = !measured          ? base - kStub
                     : std::isfinite(v) ? f.y.Map(yp.Clip(v))
                     : v > 0            ? f.area.top
                                        : f.area.bottom();
  const std::string text = g.label + " " + c.series_names[si] + ": " + (measured ? FormatSig(v) : "not measured");
  return "<rect" + std::string(measured ? "" : " class=\"not-measured\"") + " x=\"" + Px(x) + "\" y=\"" +
         Px(std::min(top, base)) + "\" width=\"" + Px(std::max(bar_w - 1, 1.0)) + "\" height=\"" +
         Px(std::fabs(base - top)) + "\" fill=\"" + (measured ? SeriesColor(static_cast<int>(si)) : "#d9d9d9") + "\"" +
         Attr("data-group", g.label) + Attr("data-series", c.series_names[si]) + Attr("data-value", FormatRaw(v)) +
         "><title>" + EscapeHtml(text) + "</title></rect>\n";
}

// The group labels under the axis, every k-th when they would not fit side by side.
std::string GroupLabels(const BarChart& c, const XyFrame& f) {
  const double group_w = f.area.width / static_cast<double>(c.groups.size());
  double widest = 0;
  for (const BarGroup& g : c.groups) widest = std::max(widest, TextWidth(g.label, kTickFont));
  const size_t every = std::max<size_t>(1, static_cast<size_t>(std::ceil((widest + 6) / group_w)));
  std::string out = "<g class=\"group-labels\" fill=\"" + std::string(kInk) + "\">\n";
  for (size_t i = 0; i < c.groups.size(); i += every) {
    out += Text(f.area.left + group_w * (static_cast<double>(i) + 0.5), f.area.bottom() + 17, c.groups[i].label,
                " text-anchor=\"middle\"");
  }
  return out + "</g>\n";
}

}  // namespace

std::string RenderBarChart(const BarChart& c) {
  Range yr;
  int clipped = 0;
  for (const BarGroup& g : c.groups) {
    for (size_t s = 0; s < c.series_names.size(); ++s) yr.Add(ValueOf(g, s)), clipped += ValueOf(g, s) <= 0;
  }
  if (yr.empty()) return NoDataSvg(c.id, c.title, c.width);
  const YPlan yp = PlanY(c.log_y, yr, clipped);
  std::vector<std::string> notes;
  if (!yp.note.empty()) notes.push_back(yp.note);
  std::vector<LegendItem> legend;
  for (size_t s = 0; s < c.series_names.size(); ++s) {
    legend.push_back(
        {c.series_names[s],
         "<rect x=\"-6\" y=\"-6\" width=\"12\" height=\"12\" fill=\"" + SeriesColor(static_cast<int>(s)) + "\"/>",
         c.series_names[s]});
  }
  XySpec spec;
  spec.width = c.width, spec.height = c.height, spec.has_title = !c.title.empty();
  spec.x_kind = ScaleKind::kLinear, spec.y_kind = yp.kind, spec.x_categorical = true;
  spec.x = {0, static_cast<double>(c.groups.size())};
  spec.y = DomainOf(yp.kind, yr, yp.floor, true);
  spec.legend_width = LegendWidth(legend), spec.legend_rows = legend.size(), spec.note_lines = notes.size();
  const XyFrame f = LayoutXy(spec);

  const std::string label = c.title.empty() ? c.y_label + " per " + c.x_label : c.title;
  std::string out = SvgOpen(c.id, "chart bar-chart", f.width, f.height, label);
  out += DrawFrame(f, c.title, c.x_label, c.y_label);
  out += GroupLabels(c, f);
  for (size_t s = 0; s < c.series_names.size(); ++s) {
    out += "<g class=\"series\"" + Attr("data-series", c.series_names[s]) + ">\n";
    for (size_t g = 0; g < c.groups.size(); ++g) out += Bar(c, g, s, f, yp);
    out += "</g>\n";
  }
  out += DrawLegend(legend, f.legend_x, f.legend_y);
  out += DrawNotes(f, notes);
  return out + "</svg>\n";
}

}  // namespace kvaudit::report
