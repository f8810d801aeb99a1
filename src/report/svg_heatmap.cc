#include "report/svg_heatmap.h"

#include <algorithm>
#include <cmath>

#include "report/html_escape.h"
#include "report/number_format.h"
#include "report/palette.h"
#include "report/svg_axis.h"
#include "report/svg_doc.h"

namespace kvaudit::report {
namespace {

constexpr const char* kNotMeasuredFill = "#d9d9d9";
constexpr double kScaleWidth = 300, kScaleHeight = 56;
constexpr double kScaleBarX = 24, kScaleBarW = 252, kScaleBarY = 22, kScaleBarH = 12;  // room for end labels
constexpr int kScaleSteps = 48;

bool LogUsable(double vmin, double vmax, bool log_scale) { return log_scale && vmin > 0 && vmax > vmin; }

std::string LabelOr(const std::vector<std::string>& labels, size_t i) {
  return i < labels.size() ? labels[i] : std::to_string(i);
}

// Three diagonal strokes inside one cell, for the hatch of a not-measured cell (print shows
// hatching where grey alone may vanish).
std::string Hatch(double x, double y, double c) {
  const double h = c / 2;
  return "M" + Px(x) + " " + Px(y + h) + " L" + Px(x + h) + " " + Px(y) + " M" + Px(x) + " " + Px(y + c) + " L" +
         Px(x + c) + " " + Px(y) + " M" + Px(x + h) + " " + Px(y + c) + " L" + Px(x + c) + " " + Px(y + h) + " ";
}

// The bar, its ticks and label, drawn at (x, y) inside the caller's svg.
std::string ScaleBody(double vmin, double vmax, bool log_scale, const std::string& label, double x, double y) {
  const bool log = LogUsable(vmin, vmax, log_scale);
  std::string out = "<g class=\"color-scale\" transform=\"translate(" + Px(x) + " " + Px(y) + ")\">\n";
  out += Text(kScaleBarX, 14, label, " font-size=\"" + Px(kLabelFont) + "\" fill=\"" + kInk + "\"");
  const double w = kScaleBarW / kScaleSteps;
  for (int i = 0; i < kScaleSteps; ++i) {
    // Each step a little wider than its share, so no hairline gaps show between them.
    out += "<rect x=\"" + Px(kScaleBarX + w * i) + "\" y=\"" + Px(kScaleBarY) + "\" width=\"" + Px(w + 0.4) +
           "\" height=\"" + Px(kScaleBarH) + "\" fill=\"" + SequentialColor((i + 0.5) / kScaleSteps) + "\"/>\n";
  }
  out += "<rect x=\"" + Px(kScaleBarX) + "\" y=\"" + Px(kScaleBarY) + "\" width=\"" + Px(kScaleBarW) + "\" height=\"" +
         Px(kScaleBarH) + "\" fill=\"none\" stroke=\"" + kInk + "\" stroke-width=\"0.5\"/>\n";
  const Scale s{log ? ScaleKind::kLog10 : ScaleKind::kLinear, vmin, vmax, kScaleBarX, kScaleBarX + kScaleBarW};
  std::vector<Tick> ticks;
  if (std::isfinite(vmin) && std::isfinite(vmax) && vmax > vmin) ticks = AxisTicks(s.kind, vmin, vmax, 4);
  if (ticks.size() < 2) ticks = {{vmin, FormatSig(vmin)}, {vmax, FormatSig(vmax)}};
  for (const Tick& t : ticks) {
    const double px = vmax > vmin ? s.Map(t.value) : kScaleBarX + (t.value == vmin ? 0 : kScaleBarW);
    out += Line(px, kScaleBarY + kScaleBarH, px, kScaleBarY + kScaleBarH + 4, " stroke=\"" + std::string(kInk) + "\"");
    out +=
        Text(px, kScaleBarY + kScaleBarH + 15, t.label, " text-anchor=\"middle\" fill=\"" + std::string(kInk) + "\"");
  }
  return out + "</g>\n";
}

struct Layout {
  double left, top, cell;
  bool rotate_cols;
  int width, height;
};

Layout LayoutMap(const Heatmap& m, size_t rows, size_t cols, bool any_nan) {
  Layout l{};
  l.cell = std::max(m.cell, 4);
  double row_w = 0, col_w = 0;
  for (size_t r = 0; r < rows; ++r) row_w = std::max(row_w, TextWidth(LabelOr(m.row_labels, r), kTickFont));
  for (size_t c = 0; c < cols; ++c) col_w = std::max(col_w, TextWidth(LabelOr(m.col_labels, c), kTickFont));
  // Column labels wider than a cell are written at -60 degrees, so their height is what counts.
  l.rotate_cols = col_w + 2 > l.cell;
  const double col_h = l.rotate_cols ? col_w * 0.87 + 8 : 16;
  l.left = row_w + 14;
  l.top = (m.title.empty() ? 8 : 30) + col_h;
  const double grid_w = l.cell * static_cast<double>(cols), grid_h = l.cell * static_cast<double>(rows);
  const double below = (any_nan ? 22 : 0) + (m.color_scale ? kScaleHeight + 6 : 0) + 8;
  double w = std::max(l.left + grid_w + 12, TextWidth(m.title, kTitleFont) + 16);
  if (any_nan) w = std::max(w, l.left + 100);
  if (m.color_scale) w = std::max(w, l.left + kScaleWidth);
  l.width = static_cast<int>(std::ceil(w));
  l.height = static_cast<int>(std::ceil(l.top + grid_h + below));
  return l;
}

std::string Labels(const Heatmap& m, const Layout& l, size_t rows, size_t cols) {
  std::string out = "<g class=\"labels\" fill=\"" + std::string(kInk) + "\">\n";
  for (size_t r = 0; r < rows; ++r) {
    out += Text(l.left - 6, l.top + l.cell * (static_cast<double>(r) + 0.5), LabelOr(m.row_labels, r),
                " dy=\"0.32em\" text-anchor=\"end\"");
  }
  for (size_t c = 0; c < cols; ++c) {
    const double x = l.left + l.cell * (static_cast<double>(c) + 0.5), y = l.top - 5;
    const std::string rot = " transform=\"rotate(-60 " + Px(x) + " " + Px(y) + ")\" text-anchor=\"start\"";
    out += Text(x, y, LabelOr(m.col_labels, c), l.rotate_cols ? rot : std::string(" text-anchor=\"middle\""));
  }
  return out + "</g>\n";
}

std::string Cell(const Heatmap& m, size_t r, size_t c, double v, double x, double y, double size) {
  const bool measured = !std::isnan(v);
  const std::string text =
      LabelOr(m.row_labels, r) + " " + LabelOr(m.col_labels, c) + ": " + (measured ? FormatSig(v) : "not measured");
  const std::string fill = measured ? SequentialColor(ScalePosition(v, m.vmin, m.vmax, m.log_scale)) : kNotMeasuredFill;
  return "<rect" + std::string(measured ? "" : " class=\"not-measured\"") + " x=\"" + Px(x) + "\" y=\"" + Px(y) +
         "\" width=\"" + Px(size) + "\" height=\"" + Px(size) + "\" fill=\"" + fill + "\"" +
         Attr("data-row", LabelOr(m.row_labels, r)) + Attr("data-col", LabelOr(m.col_labels, c)) +
         Attr("data-value", FormatRaw(v)) + "><title>" + EscapeHtml(text) + "</title></rect>\n";
}

}  // namespace

double ScalePosition(double v, double vmin, double vmax, bool log_scale) {
  if (std::isnan(v)) return v;
  if (LogUsable(vmin, vmax, log_scale)) {
    if (!(v > 0)) return 0;
    return std::clamp(std::log10(v / vmin) / std::log10(vmax / vmin), 0.0, 1.0);
  }
  if (!(vmax > vmin)) return v >= vmax ? 1 : 0;  // a degenerate range: below or at/above it
  return std::clamp((v - vmin) / (vmax - vmin), 0.0, 1.0);
}

std::string RenderHeatmap(const Heatmap& m) {
  const size_t rows = m.row_labels.size(), cols = m.col_labels.size();
  if (rows == 0 || cols == 0) return NoDataSvg(m.id, m.title, 320);
  auto value = [&](size_t r, size_t c) { return r * cols + c < m.values.size() ? m.values[r * cols + c] : NAN; };
  bool any_nan = false;
  for (size_t i = 0; i < rows * cols; ++i) any_nan = any_nan || std::isnan(value(i / cols, i % cols));
  const Layout l = LayoutMap(m, rows, cols, any_nan);
  const std::string label = m.title.empty() ? "heatmap of " + m.value_label : m.title;
  std::string out = SvgOpen(m.id, "chart heatmap", l.width, l.height, label);
  out += Title(m.title, 8);
  out += Labels(m, l, rows, cols);
  out += "<g class=\"cells\">\n";
  std::string hatch;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      const double x = l.left + l.cell * static_cast<double>(c), y = l.top + l.cell * static_cast<double>(r);
      out += Cell(m, r, c, value(r, c), x, y, l.cell - 1);
      if (std::isnan(value(r, c))) hatch += Hatch(x, y, l.cell - 1);
    }
  }
  out += "</g>\n";
  double y = l.top + l.cell * static_cast<double>(rows) + 6;
  if (any_nan) {
    // The hatch lets hover reach the cell below it; the legend swatch reuses the same strokes.
    hatch += Hatch(l.left, y + 2, 12);
    out += "<rect x=\"" + Px(l.left) + "\" y=\"" + Px(y + 2) + "\" width=\"12\" height=\"12\" fill=\"" +
           kNotMeasuredFill + "\"/>\n";
    out += "<path class=\"hatch\" d=\"" + hatch.substr(0, hatch.size() - 1) +
           "\" stroke=\"#8c8c8c\" stroke-width=\"1\" pointer-events=\"none\"/>\n";
    out += Text(l.left + 18, y + 8, "not measured", " dy=\"0.32em\" fill=\"" + std::string(kMuted) + "\"");
    y += 22;
  }
  if (m.color_scale) out += ScaleBody(m.vmin, m.vmax, m.log_scale, m.value_label, l.left - kScaleBarX, y);
  return out + "</svg>\n";
}

std::string RenderColorScale(double vmin, double vmax, bool log_scale, const std::string& label) {
  const std::string aria =
      (label.empty() ? std::string("colour scale") : label) + " from " + FormatSig(vmin) + " to " + FormatSig(vmax);
  std::string out =
      SvgOpen("", "chart color-scale-bar", static_cast<int>(kScaleWidth), static_cast<int>(kScaleHeight), aria);
  return out + ScaleBody(vmin, vmax, log_scale, label, 0, 0) + "</svg>\n";
}

}  // namespace kvaudit::report
