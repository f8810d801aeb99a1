#include "report/svg_doc.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "report/html_escape.h"
#include "report/number_format.h"

namespace kvaudit::report {

std::string Px(double v) {
  // Every coordinate attribute must be a number: NaN draws at 0, and a value far outside its
  // domain (a point beyond an extreme axis) is clamped to ±1e6 px, well off the canvas.
  if (std::isnan(v)) v = 0;
  v = std::clamp(v, -1e6, 1e6);
  std::string s = FormatFixed(v, 2);
  if (s.find('.') == std::string::npos) return s;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string Attr(std::string_view name, std::string_view value) {
  std::string out = " ";
  out.append(name);
  return out + "=\"" + EscapeHtml(value) + "\"";
}

std::string SvgOpen(std::string_view id, std::string_view cls, int width, int height, std::string_view label) {
  std::string out = "<svg";
  if (!id.empty()) out += Attr("id", id);
  out += Attr("class", cls);
  out += Attr("viewBox", "0 0 " + std::to_string(width) + " " + std::to_string(height));
  out += Attr("width", "100%");
  out += Attr("style", "max-width:" + std::to_string(width) + "px;height:auto");
  out += Attr("role", "img") + Attr("aria-label", label);
  out += Attr("font-family", kFontFamily) + Attr("font-size", Px(kTickFont));
  return out + ">\n";
}

std::string Text(double x, double y, std::string_view text, std::string_view extra) {
  std::string out = "<text x=\"" + Px(x) + "\" y=\"" + Px(y) + "\"";
  out.append(extra);
  return out + ">" + EscapeHtml(text) + "</text>\n";
}

std::string Line(double x1, double y1, double x2, double y2, std::string_view extra) {
  std::string out = "<line x1=\"" + Px(x1) + "\" y1=\"" + Px(y1) + "\" x2=\"" + Px(x2) + "\" y2=\"" + Px(y2) + "\"";
  out.append(extra);
  return out + "/>\n";
}

std::string Title(std::string_view title, double x) {
  if (title.empty()) return "";
  return Text(x, 20, title,
              " class=\"chart-title\" font-size=\"" + Px(kTitleFont) + "\" font-weight=\"600\" fill=\"" +
                  std::string(kInk) + "\"");
}

double TextWidth(std::string_view text, double font_size) {
  // Count code points, not bytes: a UTF-8 continuation byte adds no width.
  const auto points =
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<uint8_t>(c) & 0xC0) != 0x80; });
  return 0.6 * font_size * static_cast<double>(points);
}

std::string NoDataSvg(std::string_view id, std::string_view title, int width) {
  const int height = title.empty() ? 60 : 80;
  const std::string label = title.empty() ? std::string("no data") : std::string(title) + ": no data";
  std::string out = SvgOpen(id, "chart no-data", width, height, label);
  out += Title(title, 8);
  out += "<rect x=\"0.5\" y=\"" + Px(height - 50.5) + "\" width=\"" + Px(width - 1) +
         "\" height=\"44\" fill=\"none\" stroke=\"" + kGrid + "\"/>\n";
  out += Text(width / 2.0, height - 24, "no data",
              " class=\"no-data\" text-anchor=\"middle\" fill=\"" + std::string(kMuted) + "\" font-size=\"" +
                  Px(kLabelFont) + "\"");
  return out + "</svg>\n";
}

}  // namespace kvaudit::report
