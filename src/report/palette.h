// Colours of the report's charts, chosen for readers with colour-vision deficiencies and for
// printing in grey. Every chart also encodes what a colour says by a second channel (marker shape,
// legend text, position), so colour is never the only carrier.
#pragma once

#include <string>

namespace kvaudit::report {

// The 8 colours of Okabe & Ito's categorical palette (M. Okabe and K. Ito, "Color Universal
// Design (CUD): How to make figures and presentations that are friendly to colorblind people",
// 2008), distinguishable under protan, deutan and tritan vision. Order: the strongest contrasts
// on white first, yellow last (its contrast on white is weakest).
inline constexpr int kSeriesColors = 8;

// "#rrggbb" of palette entry i mod 8 (negative i wraps too).
std::string SeriesColor(int i);

// The sequential map for heatmaps: matplotlib's viridis (S. van der Walt and N. Smith, "A Better
// Default Colormap for Matplotlib", SciPy 2015), perceptually uniform, readable with colour-vision
// deficiencies and monotonic in lightness, so it prints as a grey ramp. 17 anchors of matplotlib's
// 256-entry table, linear in sRGB between them. t is clamped to [0, 1]; NaN gives t = 0.
std::string SequentialColor(double t);

}  // namespace kvaudit::report
