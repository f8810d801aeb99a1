// Scales, "nice" ticks and axes of the report's x-y charts.
#pragma once

#include <string>
#include <vector>

namespace kvaudit::report {

enum class ScaleKind { kLinear, kLog2, kLog10 };

// A data interval mapped onto a pixel interval. For a y axis px_hi < px_lo (SVG's y grows down).
struct Scale {
  ScaleKind kind = ScaleKind::kLinear;
  double lo = 0, hi = 1;        // the domain; lo < hi, and lo > 0 on a log scale
  double px_lo = 0, px_hi = 1;  // the pixels of lo and hi
  // The pixel of v (extrapolated outside the domain); on a log scale v <= 0 maps to px_lo.
  double Map(double v) const;
};

struct Tick {
  double value = 0;
  std::string label;
};

// Multiples of a 1-2-5 step (1, 2 or 5 times a power of ten) inside [lo, hi], about target of
// them. Each value is the double nearest the decimal tick (0.03, not 3 * 0.01).
std::vector<double> LinearTicks(double lo, double hi, int target = 5);

// Powers of two inside [lo, hi]: every power when there are at most max_ticks, else every k-th
// (exponents multiple of k). Empty when hi < 2 lo (no octave to mark).
std::vector<double> Log2Ticks(double lo, double hi, int max_ticks = 10);

// Powers of ten inside [lo, hi] (thinned as Log2Ticks); when fewer than two fall inside, the 1-2-5
// multiples of each decade (0.005, 0.01, 0.02, 0.05).
std::vector<double> Log10Ticks(double lo, double hi, int max_ticks = 10);

// The ticks an axis of this kind draws over [lo, hi], labelled: log2 uses powers of two when the
// range spans at least 2 octaves, log10 its decade ticks when there are two or more, otherwise (and
// on a linear axis) the 1-2-5 linear ticks.
std::vector<Tick> AxisTicks(ScaleKind kind, double lo, double hi, int target = 5);

// A tick's text: integers on a log2 axis as context lengths ("512", "1k", "32k"), others with up
// to 6 significant digits ("0.01", "10000", "1e+06").
std::string TickLabel(ScaleKind kind, double v);

// The domain a chart draws for data spanning [lo, hi]: a linear one widened to the nice ticks
// around it (and to 0 when include_zero), a log one padded by 4% of its span on each side. A
// degenerate range (lo == hi) is widened around its value. lo > 0 on a log scale.
struct Domain {
  double lo = 0, hi = 1;
};
Domain NiceDomain(ScaleKind kind, double lo, double hi, bool include_zero);

// The pixel rectangle the data are drawn in.
struct PlotArea {
  double left = 0, top = 0, width = 0, height = 0;
  double right() const { return left + width; }
  double bottom() const { return top + height; }
};

// The x axis under the area: baseline, tick marks, labels (every k-th when they would overlap),
// light vertical grid lines, and the axis label centred below.
std::string DrawXAxis(const Scale& x, const std::vector<Tick>& ticks, const PlotArea& area, const std::string& label);

// The y axis left of the area: baseline, ticks, right-aligned labels, horizontal grid lines, and
// the axis label rotated, label_x px from the svg's left edge.
std::string DrawYAxis(const Scale& y, const std::vector<Tick>& ticks, const PlotArea& area, const std::string& label,
                      double label_x);

// The widest tick label, in px, for the left margin.
double MaxTickWidth(const std::vector<Tick>& ticks);

}  // namespace kvaudit::report
