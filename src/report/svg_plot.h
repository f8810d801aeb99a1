// The frame the x-y charts (line chart, scatter) and the bar chart share: value ranges, the log-y
// plan (what is clipped, what is noted), margins sized from tick labels and the legend, the
// legend, dashed reference lines and notes.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "report/svg_axis.h"

namespace kvaudit::report {

// The finite values a chart must show on one axis.
struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  double min_positive = std::numeric_limits<double>::infinity();
  void Add(double v);  // ignores NaN and ±inf
  bool empty() const { return lo > hi; }
};

// How the y axis shows a range: a log axis cannot place values <= 0, so they are drawn at the
// smallest positive value (floor) and a note says so; with no positive value at all the axis
// falls back to linear, noted too.
struct YPlan {
  ScaleKind kind = ScaleKind::kLinear;
  double floor = 0;  // on a log axis, values below it are drawn at it
  std::string note;  // "" when nothing was changed
  double Clip(double v) const { return kind == ScaleKind::kLinear || v >= floor ? v : floor; }
};
// clipped: how many values <= 0 a log axis will draw at the floor.
YPlan PlanY(bool log_y, const Range& r, int clipped);

// "1 point", "3 points": the count and the noun that agrees with it.
std::string Counted(int n, const char* one, const char* many);

// The domain of a range on a scale (NiceDomain), log ranges read from their positive part.
Domain DomainOf(ScaleKind kind, const Range& r, double floor, bool include_zero);

// A legend entry: a swatch (SVG drawn around (0, 0)), its text, and the series it toggles.
struct LegendItem {
  std::string series;  // data-series of the entry; "" for an entry that toggles nothing (marks)
  std::string swatch;
  std::string text;
};
inline constexpr double kLegendRow = 18;
double LegendWidth(const std::vector<LegendItem>& items);
std::string DrawLegend(const std::vector<LegendItem>& items, double x, double y);

// The laid-out frame: scales, ticks, the plot area, the svg's size (its height grown when the
// legend needs more rows than fit), where the legend and the notes go.
struct XyFrame {
  Scale x, y;
  std::vector<Tick> x_ticks, y_ticks;
  PlotArea area;
  int width = 0, height = 0;
  double legend_x = 0, legend_y = 0, y_label_x = 0, notes_y = 0;
};
struct XySpec {
  int width = 760, height = 380;
  bool has_title = false;
  ScaleKind x_kind = ScaleKind::kLinear, y_kind = ScaleKind::kLinear;
  Domain x, y;
  bool x_categorical = false;  // the bar chart: no x ticks, the x scale maps [0, groups]
  double legend_width = 0;     // 0: no legend
  size_t legend_rows = 0;
  size_t note_lines = 0;
};
XyFrame LayoutXy(const XySpec& spec);

// Title, axes and grid of a laid-out frame.
std::string DrawFrame(const XyFrame& f, const std::string& title, const std::string& x_label,
                      const std::string& y_label);

// A dashed reference line across the area at value (vertical: on x), with its label.
std::string DrawReference(const XyFrame& f, bool vertical, double value, const std::string& label,
                          const std::string& cls);

// Notes below the axis label, one line each, muted.
std::string DrawNotes(const XyFrame& f, const std::vector<std::string>& notes);

// "M x y L x y ..." for a polyline through pixel points; each run of consecutive finite points
// is its own subpath (a NaN breaks the line).
std::string PathData(const std::vector<double>& px, const std::vector<double>& py);

}  // namespace kvaudit::report
