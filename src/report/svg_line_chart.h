// A line chart as inline SVG: one marker per finite point (its raw values in data-* attributes
// and a native hover tooltip), optional confidence bands, a legend, an optional dashed threshold.
// Each series is a <g class="series" data-series="NAME"> (its legend entry a .legend-item with
// the same data-series), so a page script can toggle it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kvaudit::report {

struct LineSeries {
  std::string name;            // legend text, e.g. "k=q4_0,v=q4_0"
  int color = 0;               // palette index (SeriesColor)
  std::vector<double> x, y;    // same length; NaN y = gap
  std::vector<double> lo, hi;  // optional CI band (empty = none), same length as x
};

struct LineChart {
  std::string id;                       // DOM id of the <svg>, e.g. "kld-vs-context"
  std::string title, x_label, y_label;  // labels carry units, e.g. "context length (tokens)", "mean KLD (nats)"
  enum class XScale { kLinear, kLog2, kLog10 } x_scale = XScale::kLog2;
  bool log_y = false;               // log10 y (values <= 0 clipped to the smallest positive, noted)
  std::optional<double> threshold;  // a horizontal dashed line
  std::string threshold_label;      // e.g. "policy limit 0.05"
  std::vector<LineSeries> series;
  int width = 760, height = 380;
};

// The chart's <svg> element. Points are drawn in x order; a point is drawn when x and y are finite
// (and x > 0 on a log x axis; the others are counted in a note). Series whose lo/hi do not match
// x in length get no band. No drawable point at all: a small "no data" svg.
std::string RenderLineChart(const LineChart& chart);

}  // namespace kvaudit::report
