// A heatmap as inline SVG (rows x columns of cells coloured by viridis, e.g. layers x KV heads),
// and the colour-scale bar a group of heatmaps shares.
#pragma once

#include <string>
#include <vector>

namespace kvaudit::report {

struct Heatmap {
  std::string id, title;
  std::vector<std::string> row_labels;  // e.g. "L0".."L5" (layers)
  std::vector<std::string> col_labels;  // e.g. "h0".."h1" (KV heads)
  std::vector<double> values;           // [rows, cols] row-major; NaN = not measured (hatched/grey cell)
  double vmin = 0, vmax = 1;  // the shared colour scale (the caller passes the same range to every heatmap of a group)
  bool log_scale = false;     // colour by log10 when the values span decades
  std::string value_label;    // e.g. "attention-output relative error"
  int cell = 22;              // cell size in px
  bool color_scale = false;   // also draw the colour scale under the map (a map shown alone)
};

// The map's <svg>: rows = row_labels.size(), cols = col_labels.size(), one <rect> per cell with
// data-row and data-col (the labels), data-value (%.17g, "NaN" when not measured) and a <title>
// ("L3 h1: 0.0123"). A not-measured cell is grey and hatched (class "not-measured"), with a legend
// swatch saying so. values shorter than rows * cols: the missing cells are not measured. No rows
// or no columns: a "no data" svg.
std::string RenderHeatmap(const Heatmap& map);

// A horizontal legend bar from vmin to vmax with ticks and the label above it.
std::string RenderColorScale(double vmin, double vmax, bool log_scale, const std::string& label);

// Where v falls on the colour scale, in [0, 1] (clamped): linear, or by log10 when log_scale and
// 0 < vmin < vmax (otherwise linear; a log scale needs a positive range). v <= 0 on a log scale
// is 0. NaN stays NaN.
double ScalePosition(double v, double vmin, double vmax, bool log_scale);

}  // namespace kvaudit::report
