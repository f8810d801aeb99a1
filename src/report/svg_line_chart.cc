#include "report/svg_line_chart.h"

#include <algorithm>
#include <cmath>

#include "report/html_escape.h"
#include "report/number_format.h"
#include "report/palette.h"
#include "report/svg_doc.h"
#include "report/svg_plot.h"

namespace kvaudit::report {
namespace {

ScaleKind KindOf(LineChart::XScale s) {
  switch (s) {
    case LineChart::XScale::kLinear: return ScaleKind::kLinear;
    case LineChart::XScale::kLog2: return ScaleKind::kLog2;
    case LineChart::XScale::kLog10: return ScaleKind::kLog10;
  }
  return ScaleKind::kLinear;
}

bool HasBand(const LineSeries& s) { return !s.lo.empty() && s.lo.size() == s.x.size() && s.hi.size() == s.x.size(); }

// The indices of a series' points with a usable x, in x order (stable: ties keep input order).
// Points whose y is not finite stay in the list: they are the gaps that break the line.
std::vector<size_t> InXOrder(const LineSeries& s, bool log_x, int* skipped_x) {
  std::vector<size_t> out;
  for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
    if (!std::isfinite(s.x[i])) continue;
    if (log_x && !(s.x[i] > 0)) {
      *skipped_x += std::isfinite(s.y[i]);
      continue;
    }
    out.push_back(i);
  }
  std::stable_sort(out.begin(), out.end(), [&s](size_t a, size_t b) { return s.x[a] < s.x[b]; });
  return out;
}

// What the chart draws, gathered once: the drawable points of each series and the value ranges.
struct Plan {
  std::vector<std::vector<size_t>> points;
  Range x, y;
  int skipped_x = 0, clipped_y = 0, infinite_y = 0;  // infinite_y: drawn as gaps, noted
  size_t total = 0;
};

Plan MakePlan(const LineChart& c, bool log_x) {
  Plan p;
  for (const LineSeries& s : c.series) {
    p.points.push_back(InXOrder(s, log_x, &p.skipped_x));
    for (size_t i : p.points.back()) {
      if (!std::isfinite(s.y[i])) {
        p.infinite_y += std::isinf(s.y[i]);
        continue;
      }
      ++p.total;
      p.x.Add(s.x[i]), p.y.Add(s.y[i]);
      p.clipped_y += s.y[i] <= 0;
      if (!HasBand(s)) continue;
      for (double b : {s.lo[i], s.hi[i]}) p.y.Add(b), p.clipped_y += std::isfinite(b) && b <= 0;
    }
  }
  if (c.threshold) p.y.Add(*c.threshold);
  return p;
}

std::string Tooltip(const LineSeries& s, size_t i, bool band) {
  std::string t = s.name + " \u2014 x: " + FormatSig(s.x[i], 6) + ", y: " + FormatSig(s.y[i]);
  if (band && std::isfinite(s.lo[i]) && std::isfinite(s.hi[i]))
    t += " [" + FormatSig(s.lo[i]) + ", " + FormatSig(s.hi[i]) + "]";
  return t;
}

// The translucent band: for each run of points with a finite lo and hi, the hi edge forward and
// the lo edge back, closed.
std::string Band(const LineSeries& s, const std::vector<size_t>& idx, const XyFrame& f, const YPlan& yp,
                 const std::string& color) {
  std::string d;
  for (size_t a = 0; a < idx.size();) {
    auto ok = [&](size_t k) {
      return std::isfinite(s.y[idx[k]]) && std::isfinite(s.lo[idx[k]]) && std::isfinite(s.hi[idx[k]]);
    };
    if (!ok(a)) {
      ++a;
      continue;
    }
    size_t b = a;
    while (b + 1 < idx.size() && ok(b + 1)) ++b;
    for (size_t k = a; k <= b; ++k)
      d += (k == a ? "M" : " L") + Px(f.x.Map(s.x[idx[k]])) + " " + Px(f.y.Map(yp.Clip(s.hi[idx[k]])));
    for (size_t k = b + 1; k-- > a;) d += " L" + Px(f.x.Map(s.x[idx[k]])) + " " + Px(f.y.Map(yp.Clip(s.lo[idx[k]])));
    d += " Z ";
    a = b + 1;
  }
  if (d.empty()) return "";
  d.pop_back();
  return "<path class=\"band\" d=\"" + d + "\" fill=\"" + color + "\" fill-opacity=\"0.18\" stroke=\"none\"/>\n";
}

std::string Series(const LineSeries& s, const std::vector<size_t>& idx, const XyFrame& f, const YPlan& yp) {
  const std::string color = SeriesColor(s.color);
  std::string out = "<g class=\"series\"" + Attr("data-series", s.name) + ">\n";
  const bool band = HasBand(s);
  if (band) out += Band(s, idx, f, yp, color);
  // A point whose y is not finite is a gap: PathData breaks the line at its NaN pixel.
  std::vector<double> px, py;
  for (size_t i : idx) {
    px.push_back(f.x.Map(s.x[i]));
    py.push_back(std::isfinite(s.y[i]) ? f.y.Map(yp.Clip(s.y[i])) : NAN);
  }
  const std::string d = PathData(px, py);
  if (d.find('L') != std::string::npos) {
    out += "<path class=\"line\" d=\"" + d + "\" fill=\"none\" stroke=\"" + color +
           "\" stroke-width=\"2\" stroke-linejoin=\"round\"/>\n";
  }
  for (size_t k = 0; k < idx.size(); ++k) {
    const size_t i = idx[k];
    if (!std::isfinite(s.y[i])) continue;
    out += "<circle cx=\"" + Px(px[k]) + "\" cy=\"" + Px(py[k]) + "\" r=\"3.5\" fill=\"" + color +
           "\" stroke=\"#ffffff\" stroke-width=\"1\"" + Attr("data-series", s.name) +
           Attr("data-x", FormatRaw(s.x[i])) + Attr("data-y", FormatRaw(s.y[i])) + "><title>" +
           EscapeHtml(Tooltip(s, i, band)) + "</title></circle>\n";
  }
  return out + "</g>\n";
}

std::string Swatch(const std::string& color) {
  return "<line x1=\"-8\" y1=\"0\" x2=\"8\" y2=\"0\" stroke=\"" + color +
         "\" stroke-width=\"2\"/><circle r=\"3.5\" fill=\"" + color + "\"/>";
}

}  // namespace

std::string RenderLineChart(const LineChart& c) {
  const ScaleKind x_kind = KindOf(c.x_scale);
  const Plan p = MakePlan(c, x_kind != ScaleKind::kLinear);
  if (p.total == 0) return NoDataSvg(c.id, c.title, c.width);
  const YPlan yp = PlanY(c.log_y, p.y, p.clipped_y);
  std::vector<std::string> notes;
  if (!yp.note.empty()) notes.push_back(yp.note);
  if (p.skipped_x > 0)
    notes.push_back(Counted(p.skipped_x, "point", "points") + " with x \u2264 0 not drawn (log x scale)");
  if (p.infinite_y > 0) notes.push_back(Counted(p.infinite_y, "point", "points") + " with an infinite y not drawn");
  std::vector<LegendItem> legend;
  for (const LineSeries& s : c.series) legend.push_back({s.name, Swatch(SeriesColor(s.color)), s.name});

  XySpec spec;
  spec.width = c.width, spec.height = c.height, spec.has_title = !c.title.empty();
  spec.x_kind = x_kind, spec.y_kind = yp.kind;
  spec.x = DomainOf(x_kind, p.x, 0, false);
  spec.y = DomainOf(yp.kind, p.y, yp.floor, true);
  spec.legend_width = LegendWidth(legend), spec.legend_rows = legend.size(), spec.note_lines = notes.size();
  const XyFrame f = LayoutXy(spec);

  const std::string label = c.title.empty() ? c.y_label + " against " + c.x_label : c.title;
  std::string out = SvgOpen(c.id, "chart line-chart", f.width, f.height, label);
  out += DrawFrame(f, c.title, c.x_label, c.y_label);
  for (size_t k = 0; k < c.series.size(); ++k) out += Series(c.series[k], p.points[k], f, yp);
  if (c.threshold && std::isfinite(*c.threshold)) {
    const std::string text = c.threshold_label.empty() ? "threshold " + FormatSig(*c.threshold) : c.threshold_label;
    out += DrawReference(f, false, yp.Clip(*c.threshold), text, "threshold");
  }
  out += DrawLegend(legend, f.legend_x, f.legend_y);
  out += DrawNotes(f, notes);
  return out + "</svg>\n";
}

}  // namespace kvaudit::report
