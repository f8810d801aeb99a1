// A grouped bar chart as inline SVG, made for sensitivity per layer with K and V as two series:
// groups along x, one bar per series in each group.
#pragma once

#include <string>
#include <vector>

namespace kvaudit::report {

struct BarGroup {
  std::string label;           // e.g. "L3"
  std::vector<double> values;  // one per series; NaN = not measured
};

struct BarChart {
  std::string id, title, x_label, y_label;
  std::vector<std::string> series_names;
  std::vector<BarGroup> groups;
  bool log_y = false;  // log10 y; bars rise from the bottom of the axis (values <= 0 clipped, noted)
  int width = 760, height = 320;
};

// The chart's <svg>: each bar a <rect> with data-group, data-series, data-value (%.17g) and a
// <title> ("L3 K: 0.0123"); the bars of one series in a <g class="series" data-series="NAME">,
// coloured SeriesColor(series index). A not-measured value is a short grey mark (class
// "not-measured", data-value "NaN"). A linear axis includes 0 and bars grow from it (down for
// negative values). No finite value: a "no data" svg.
std::string RenderBarChart(const BarChart& chart);

}  // namespace kvaudit::report
