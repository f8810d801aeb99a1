// What every chart of the report writes: the <svg> element, escaped attributes and text, pixel
// numbers, the "no data" figure. A chart is inline SVG inside the HTML page, so the root carries
// no xmlns (the HTML parser puts <svg> in the SVG namespace itself) and the output never names a
// URL: the page stays self-contained and the "no external reference" check is a substring test.
#pragma once

#include <string>
#include <string_view>

namespace kvaudit::report {

inline constexpr const char* kFontFamily = "system-ui, sans-serif";  // no web fonts
inline constexpr double kTickFont = 11, kLabelFont = 12, kTitleFont = 14;
inline constexpr const char* kInk = "#222222";    // text and axes
inline constexpr const char* kGrid = "#e4e4e4";   // grid lines
inline constexpr const char* kMuted = "#666666";  // notes, reference lines

// A pixel coordinate: 2 decimals, trailing zeros dropped ("12.5", "3", never "-0"); NaN as 0 and
// anything beyond ±1e6 clamped, so an attribute is always a number.
std::string Px(double v);

// ` name="value"` with the value escaped (EscapeHtml).
std::string Attr(std::string_view name, std::string_view value);

// The root element of a chart: id (omitted when empty), class, viewBox 0 0 width height,
// width="100%" with max-width so it scales down on screen and in print, role="img" and
// aria-label. The caller appends children and "</svg>\n".
std::string SvgOpen(std::string_view id, std::string_view cls, int width, int height, std::string_view label);

// <text> at (x, y) with the text escaped; extra is raw attribute text (" text-anchor=\"end\"").
std::string Text(double x, double y, std::string_view text, std::string_view extra = "");

// A straight <line>; extra is raw attribute text (stroke, dash).
std::string Line(double x1, double y1, double x2, double y2, std::string_view extra);

// The chart's title, top-left, when it has one; "" otherwise.
std::string Title(std::string_view title, double x);

// An estimate of a label's width in px (0.6 em per code point, a system-ui average), for layout.
double TextWidth(std::string_view text, double font_size);

// A small figure that says "no data" (and the title when there is one), for a chart with nothing
// finite to draw: the page keeps its structure and the reader sees why the chart is empty.
std::string NoDataSvg(std::string_view id, std::string_view title, int width);

}  // namespace kvaudit::report
