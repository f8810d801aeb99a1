#include "report/number_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <system_error>

namespace kvaudit::report {
namespace {

constexpr const char* kNotMeasured = "\u2013";  // en dash

std::string NonFinite(double v) {
  if (std::isnan(v)) return kNotMeasured;
  return v > 0 ? "inf" : "-inf";
}

// to_chars never consults the locale; 400 bytes hold any %.17g and any %.17f (DBL_MAX has 309
// integer digits), so the error branch is never taken.
std::string ToChars(double v, std::chars_format fmt, int precision) {
  char buf[400];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, fmt, precision);
  if (ec != std::errc()) return "?";
  return std::string(buf, end);
}

// "1.50" -> "1.5", "2.00" -> "2"; no decimal point -> unchanged.
std::string TrimZeros(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

std::string FormatSig(double v, int sig) {
  if (!std::isfinite(v)) return NonFinite(v);
  if (v == 0) v = 0;  // -0 -> 0: an axis tick computed as -0.0 * step reads "0"
  return ToChars(v, std::chars_format::general, std::clamp(sig, 1, 17));
}

std::string FormatFixed(double v, int decimals) {
  if (!std::isfinite(v)) return NonFinite(v);
  std::string s = ToChars(v, std::chars_format::fixed, std::clamp(decimals, 0, 17));
  // "-0.00" after rounding a tiny negative: print it as zero.
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

std::string FormatBytes(double bytes) {
  if (!std::isfinite(bytes)) return NonFinite(bytes);
  const double mag = std::fabs(bytes);
  if (mag < 10240) return FormatSig(bytes, 8) + " B";
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = mag / 1024;
  int unit = 0;
  while (v >= 1024 && unit < 5) v /= 1024, ++unit;
  // 3 significant digits: 2 decimals below 10, 1 below 100, none above; a value that rounds up to
  // 1024 moves to the next unit so "1024 MiB" never appears.
  int decimals = v < 10 ? 2 : v < 100 ? 1 : 0;
  std::string digits = ToChars(v, std::chars_format::fixed, decimals);
  if (std::strtod(digits.c_str(), nullptr) >= 1024 && unit < 5) {
    v /= 1024, ++unit;
    digits = ToChars(v, std::chars_format::fixed, 2);
  }
  return (bytes < 0 ? "-" : "") + TrimZeros(digits) + " " + kUnits[unit];
}

std::string FormatContext(long n) {
  if (n != 0 && n % 1024 == 0) return std::to_string(n / 1024) + "k";
  return std::to_string(n);
}

std::string FormatRaw(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return ToChars(v, std::chars_format::general, 17);
}

}  // namespace kvaudit::report
