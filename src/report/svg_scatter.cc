#include "report/svg_scatter.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "report/html_escape.h"
#include "report/number_format.h"
#include "report/palette.h"
#include "report/svg_doc.h"
#include "report/svg_plot.h"

namespace kvaudit::report {
namespace {

using Mark = ScatterPoint::Mark;
constexpr Mark kMarks[] = {Mark::kFront, Mark::kVerifiedPass, Mark::kVerifiedFail, Mark::kRecommended};

const char* MarkText(Mark m) {
  switch (m) {
    case Mark::kFront: return "on the front";
    case Mark::kVerifiedPass: return "verified: pass";
    case Mark::kVerifiedFail: return "verified: fail";
    case Mark::kRecommended: return "recommended";
  }
  return "";
}

// A five-pointed star of outer radius r around (cx, cy), as path data.
std::string Star(double cx, double cy, double r) {
  std::string d;
  for (int k = 0; k < 10; ++k) {
    const double a = -std::numbers::pi / 2 + k * std::numbers::pi / 5, rr = k % 2 == 0 ? r : r * 0.45;
    d += (k == 0 ? "M" : " L") + Px(cx + rr * std::cos(a)) + " " + Px(cy + rr * std::sin(a));
  }
  return d + " Z";
}

// The marker element of one mark at (cx, cy): its opening tag without the closing '>', so the
// caller adds the data attributes and the <title>; the element's name comes back in *tag.
std::string Shape(Mark m, double cx, double cy, const std::string& color, const char** tag) {
  const std::string c = "\"" + color + "\"";
  switch (m) {
    case Mark::kFront:
      *tag = "circle";
      return "<circle cx=\"" + Px(cx) + "\" cy=\"" + Px(cy) + "\" r=\"4\" fill=\"#ffffff\" stroke=" + c +
             " stroke-width=\"1.8\"";
    case Mark::kVerifiedPass:
      *tag = "rect";
      return "<rect x=\"" + Px(cx - 4.5) + "\" y=\"" + Px(cy - 4.5) + "\" width=\"9\" height=\"9\" fill=" + c +
             " stroke=\"#ffffff\" stroke-width=\"0.8\"";
    case Mark::kVerifiedFail:
      *tag = "path";
      return "<path d=\"M" + Px(cx - 4.5) + " " + Px(cy - 4.5) + " L" + Px(cx + 4.5) + " " + Px(cy + 4.5) + " M" +
             Px(cx - 4.5) + " " + Px(cy + 4.5) + " L" + Px(cx + 4.5) + " " + Px(cy - 4.5) +
             "\" fill=\"none\" stroke=" + c + " stroke-width=\"2.2\" stroke-linecap=\"round\"";
    case Mark::kRecommended:
      *tag = "path";
      return "<path d=\"" + Star(cx, cy, 9) + "\" fill=" + c + " stroke=\"" + kInk + "\" stroke-width=\"1.2\"";
  }
  return "";
}

bool Drawable(const ScatterPoint& p, bool log_x) {
  return std::isfinite(p.x) && std::isfinite(p.y) && (!log_x || p.x > 0);
}

std::string Point(const ScatterSeries& s, const ScatterPoint& p, const XyFrame& f, const YPlan& yp) {
  const char* tag = "";
  const std::string color = SeriesColor(s.color);
  std::string out = Shape(p.mark, f.x.Map(p.x), f.y.Map(yp.Clip(p.y)), color, &tag);
  const std::string title = (p.label.empty() ? s.name : p.label + " (" + s.name + ")") +
                            " \u2014 x: " + FormatSig(p.x, 6) + ", y: " + FormatSig(p.y) + "; " + MarkText(p.mark);
  out += Attr("data-series", s.name) + Attr("data-x", FormatRaw(p.x)) + Attr("data-y", FormatRaw(p.y)) +
         Attr("data-label", p.label) + Attr("data-mark", MarkName(p.mark));
  return out + "><title>" + EscapeHtml(title) + "</title></" + tag + ">\n";
}

std::string Series(const ScatterSeries& s, const XyFrame& f, const YPlan& yp, bool log_x) {
  std::vector<const ScatterPoint*> pts;
  for (const ScatterPoint& p : s.points) {
    if (Drawable(p, log_x)) pts.push_back(&p);
  }
  std::stable_sort(pts.begin(), pts.end(), [](const ScatterPoint* a, const ScatterPoint* b) { return a->x < b->x; });
  std::string out = "<g class=\"series\"" + Attr("data-series", s.name) + ">\n";
  if (s.connect && pts.size() >= 2) {
    std::vector<double> px, py;
    for (const ScatterPoint* p : pts) px.push_back(f.x.Map(p->x)), py.push_back(f.y.Map(yp.Clip(p->y)));
    out += "<path class=\"line\" d=\"" + PathData(px, py) + "\" fill=\"none\" stroke=\"" + SeriesColor(s.color) +
           "\" stroke-width=\"1.5\" stroke-opacity=\"0.8\"/>\n";
  }
  // Recommended last, so its star is never hidden under a neighbour's marker.
  for (const ScatterPoint* p : pts) {
    if (p->mark != Mark::kRecommended) out += Point(s, *p, f, yp);
  }
  for (const ScatterPoint* p : pts) {
    if (p->mark == Mark::kRecommended) out += Point(s, *p, f, yp);
  }
  return out + "</g>\n";
}

std::vector<LegendItem> Legend(const Scatter& plot, bool log_x) {
  std::vector<LegendItem> items;
  bool used[4] = {false, false, false, false};
  for (const ScatterSeries& s : plot.series) {
    items.push_back(
        {s.name,
         "<line x1=\"-8\" y1=\"0\" x2=\"8\" y2=\"0\" stroke=\"" + SeriesColor(s.color) + "\" stroke-width=\"2\"/>",
         s.name});
    for (const ScatterPoint& p : s.points) used[static_cast<int>(p.mark)] |= Drawable(p, log_x);
  }
  for (Mark m : kMarks) {
    if (!used[static_cast<int>(m)]) continue;
    const char* tag = "";
    items.push_back({"", Shape(m, 0, 0, kMuted, &tag) + "/>", MarkText(m)});
  }
  return items;
}

}  // namespace

const char* MarkName(Mark m) {
  switch (m) {
    case Mark::kFront: return "front";
    case Mark::kVerifiedPass: return "pass";
    case Mark::kVerifiedFail: return "fail";
    case Mark::kRecommended: return "recommended";
  }
  return "";
}

std::string RenderScatter(const Scatter& plot) {
  Range xr, yr;
  int clipped = 0, skipped_x = 0, infinite = 0;  // infinite: a coordinate is ±inf, noted
  for (const ScatterSeries& s : plot.series) {
    for (const ScatterPoint& p : s.points) {
      if (!Drawable(p, plot.log_x)) {
        skipped_x += std::isfinite(p.x) && std::isfinite(p.y);
        infinite += std::isinf(p.x) || std::isinf(p.y);
        continue;
      }
      xr.Add(p.x), yr.Add(p.y), clipped += p.y <= 0;
    }
  }
  if (xr.empty()) return NoDataSvg(plot.id, plot.title, plot.width);
  if (plot.x_marker && (!plot.log_x || *plot.x_marker > 0)) xr.Add(*plot.x_marker);
  if (plot.y_marker) yr.Add(*plot.y_marker);
  const YPlan yp = PlanY(plot.log_y, yr, clipped);
  const ScaleKind x_kind = plot.log_x ? ScaleKind::kLog10 : ScaleKind::kLinear;
  std::vector<std::string> notes;
  if (!yp.note.empty()) notes.push_back(yp.note);
  if (skipped_x > 0)
    notes.push_back(Counted(skipped_x, "point", "points") + " with x \u2264 0 not drawn (log x scale)");
  if (infinite > 0) notes.push_back(Counted(infinite, "point", "points") + " with an infinite coordinate not drawn");
  const std::vector<LegendItem> legend = Legend(plot, plot.log_x);

  XySpec spec;
  spec.width = plot.width, spec.height = plot.height, spec.has_title = !plot.title.empty();
  spec.x_kind = x_kind, spec.y_kind = yp.kind;
  spec.x = DomainOf(x_kind, xr, xr.min_positive, false);
  spec.y = DomainOf(yp.kind, yr, yp.floor, false);
  spec.legend_width = LegendWidth(legend), spec.legend_rows = legend.size(), spec.note_lines = notes.size();
  const XyFrame f = LayoutXy(spec);

  const std::string label = plot.title.empty() ? plot.y_label + " against " + plot.x_label : plot.title;
  std::string out = SvgOpen(plot.id, "chart scatter", f.width, f.height, label);
  out += DrawFrame(f, plot.title, plot.x_label, plot.y_label);
  if (plot.x_marker && std::isfinite(*plot.x_marker) && (!plot.log_x || *plot.x_marker > 0)) {
    out += DrawReference(f, true, *plot.x_marker, plot.x_marker_label, "x-marker");
  }
  if (plot.y_marker && std::isfinite(*plot.y_marker))
    out += DrawReference(f, false, yp.Clip(*plot.y_marker), plot.y_marker_label, "y-marker");
  for (const ScatterSeries& s : plot.series) out += Series(s, f, yp, plot.log_x);
  out += DrawLegend(legend, f.legend_x, f.legend_y);
  out += DrawNotes(f, notes);
  return out + "</svg>\n";
}

}  // namespace kvaudit::report
