// A scatter plot as inline SVG, made for the Pareto front of KV-cache configurations (bytes per
// token against KLD): what a point is (on the front, verified pass or fail, recommended) is told
// by its marker's shape as well as by the legend, never by colour alone.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kvaudit::report {

struct ScatterPoint {
  double x, y;
  std::string label;
  enum class Mark { kFront, kVerifiedPass, kVerifiedFail, kRecommended } mark = Mark::kFront;
};

struct ScatterSeries {
  std::string name;
  int color = 0;
  bool connect = true;  // connect: draw a step/line through the points in x order
  std::vector<ScatterPoint> points;
};

struct Scatter {
  std::string id, title, x_label, y_label;
  bool log_y = true;
  std::optional<double> x_marker;
  std::string x_marker_label;  // e.g. the budget: a vertical dashed line
  std::optional<double> y_marker;
  std::string y_marker_label;
  std::vector<ScatterSeries> series;
  int width = 760, height = 400;
  bool log_x = false;  // log10 x (points with x <= 0 are not drawn, noted)
};

// The plot's <svg>. Marks: front an open circle, verified pass a filled square, verified fail a
// cross, recommended a large star; each marker element carries data-x, data-y (%.17g), data-label,
// data-mark ("front", "pass", "fail", "recommended") and a <title>. Each series is a
// <g class="series" data-series="NAME">; the legend lists the series and the marks that occur.
// No point with finite x and y: a "no data" svg.
std::string RenderScatter(const Scatter& plot);

// The data-mark text of a mark.
const char* MarkName(ScatterPoint::Mark mark);

}  // namespace kvaudit::report
