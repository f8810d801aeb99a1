#include "report/svg_plot.h"

#include <algorithm>
#include <cmath>

#include "report/number_format.h"
#include "report/svg_doc.h"

namespace kvaudit::report {
namespace {

constexpr double kTopWithTitle = 34, kTopBare = 14;
constexpr double kBottom = 46, kNoteLine = 15;
constexpr double kMinArea = 80;

// Enough ticks that a wide chart is not bare, few enough that labels stay apart.
int TickTarget(double px) { return std::clamp(static_cast<int>(px / 90), 3, 8); }

}  // namespace

void Range::Add(double v) {
  if (!std::isfinite(v)) return;
  lo = std::min(lo, v), hi = std::max(hi, v);
  if (v > 0) min_positive = std::min(min_positive, v);
}

std::string Counted(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

YPlan PlanY(bool log_y, const Range& r, int clipped) {
  YPlan plan;
  if (!log_y) return plan;
  if (!std::isfinite(r.min_positive)) {
    plan.note = "no value above 0: linear y scale instead of log";
    return plan;
  }
  plan.kind = ScaleKind::kLog10;
  plan.floor = r.min_positive;
  if (clipped > 0) {
    plan.note =
        Counted(clipped, "value", "values") + " \u2264 0 drawn at " + FormatSig(r.min_positive) + " (log scale)";
  }
  return plan;
}

Domain DomainOf(ScaleKind kind, const Range& r, double floor, bool include_zero) {
  if (kind == ScaleKind::kLinear) return NiceDomain(kind, r.lo, r.hi, include_zero);
  return NiceDomain(kind, std::max(r.lo, floor), std::max(r.hi, floor), false);
}

double LegendWidth(const std::vector<LegendItem>& items) {
  double w = 0;
  for (const LegendItem& it : items) w = std::max(w, TextWidth(it.text, kTickFont));
  return items.empty() ? 0 : w + 24;
}

std::string DrawLegend(const std::vector<LegendItem>& items, double x, double y) {
  std::string out = "<g class=\"legend\">\n";
  for (size_t i = 0; i < items.size(); ++i) {
    const LegendItem& it = items[i];
    out += "<g class=\"legend-item\"";
    if (!it.series.empty()) out += Attr("data-series", it.series);
    out += " transform=\"translate(" + Px(x + 8) + " " + Px(y + 9 + kLegendRow * static_cast<double>(i)) + ")\">";
    out += it.swatch + Text(14, 0, it.text, " dy=\"0.32em\" fill=\"" + std::string(kInk) + "\"") + "</g>\n";
  }
  return out + "</g>\n";
}

XyFrame LayoutXy(const XySpec& s) {
  XyFrame f;
  const double top = s.has_title ? kTopWithTitle : kTopBare;
  f.y_ticks = AxisTicks(s.y_kind, s.y.lo, s.y.hi, 5);
  const double left = MaxTickWidth(f.y_ticks) + 12 + 30;
  const double right = s.legend_width > 0 ? s.legend_width + 24 : 16;
  const double bottom = kBottom + kNoteLine * static_cast<double>(s.note_lines);
  // The chart grows instead of cutting a long legend: the plot keeps half the requested width,
  // and the height holds every legend row.
  const double area_w = std::max(s.width - left - right, s.width * 0.5);
  const double legend_h = kLegendRow * static_cast<double>(s.legend_rows) + 8;
  const double area_h = std::max(s.height - top - bottom, kMinArea);
  f.area = {left, top, area_w, area_h};
  f.width = static_cast<int>(std::ceil(left + area_w + right));
  f.height = static_cast<int>(std::ceil(std::max(top + area_h + bottom, top + legend_h)));
  f.x = {s.x_kind, s.x.lo, s.x.hi, f.area.left, f.area.right()};
  f.y = {s.y_kind, s.y.lo, s.y.hi, f.area.bottom(), f.area.top};
  if (!s.x_categorical) f.x_ticks = AxisTicks(s.x_kind, s.x.lo, s.x.hi, TickTarget(area_w));
  f.legend_x = f.area.right() + 16, f.legend_y = top;
  f.y_label_x = 16, f.notes_y = f.area.bottom() + 54;
  return f;
}

std::string DrawFrame(const XyFrame& f, const std::string& title, const std::string& x_label,
                      const std::string& y_label) {
  std::string out = Title(title, f.area.left);
  out += DrawYAxis(f.y, f.y_ticks, f.area, y_label, f.y_label_x);
  out += DrawXAxis(f.x, f.x_ticks, f.area, x_label);
  return out;
}

std::string DrawReference(const XyFrame& f, bool vertical, double value, const std::string& label,
                          const std::string& cls) {
  const std::string style = " stroke=\"" + std::string(kMuted) + "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"";
  const std::string text_style = " font-size=\"" + Px(kTickFont) + "\" fill=\"" + kMuted + "\"";
  std::string out = "<g" + Attr("class", cls) + Attr("data-value", FormatRaw(value)) + ">\n";
  if (vertical) {
    const double px = f.x.Map(value);
    out += Line(px, f.area.top, px, f.area.bottom(), style);
    const bool near_right = px > f.area.right() - TextWidth(label, kTickFont) - 8;
    out += Text(near_right ? px - 4 : px + 4, f.area.top + 12, label,
                text_style + (near_right ? " text-anchor=\"end\"" : ""));
  } else {
    const double py = f.y.Map(value);
    out += Line(f.area.left, py, f.area.right(), py, style);
    out += Text(f.area.right() - 4, py - 5, label, text_style + " text-anchor=\"end\"");
  }
  return out + "</g>\n";
}

std::string DrawNotes(const XyFrame& f, const std::vector<std::string>& notes) {
  std::string out;
  for (size_t i = 0; i < notes.size(); ++i) {
    out += Text(f.area.left, f.notes_y + kNoteLine * static_cast<double>(i), notes[i],
                " class=\"note\" fill=\"" + std::string(kMuted) + "\"");
  }
  return out;
}

std::string PathData(const std::vector<double>& px, const std::vector<double>& py) {
  std::string d;
  bool pen_down = false;
  for (size_t i = 0; i < px.size() && i < py.size(); ++i) {
    if (!std::isfinite(px[i]) || !std::isfinite(py[i])) {
      pen_down = false;
      continue;
    }
    if (!d.empty()) d += ' ';
    d += (pen_down ? "L" : "M") + Px(px[i]) + " " + Px(py[i]);
    pen_down = true;
  }
  return d;
}

}  // namespace kvaudit::report
