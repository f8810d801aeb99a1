#include "report/palette.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace kvaudit::report {
namespace {

struct Rgb {
  uint8_t r, g, b;
};

// Okabe & Ito 2008: blue, vermillion, bluish green, reddish purple, orange, sky blue, black,
// yellow.
constexpr std::array<Rgb, kSeriesColors> kOkabeIto = {{
    {0x00, 0x72, 0xB2},
    {0xD5, 0x5E, 0x00},
    {0x00, 0x9E, 0x73},
    {0xCC, 0x79, 0xA7},
    {0xE6, 0x9F, 0x00},
    {0x56, 0xB4, 0xE9},
    {0x00, 0x00, 0x00},
    {0xF0, 0xE4, 0x42},
}};

// matplotlib's _viridis_data (lib/matplotlib/_cm_listed.py) at entries round(255 k / 16),
// k = 0..16, each channel rounded to 8 bits as matplotlib's to_hex does.
constexpr std::array<Rgb, 17> kViridis = {{
    {0x44, 0x01, 0x54},
    {0x48, 0x18, 0x6a},
    {0x47, 0x2d, 0x7b},
    {0x42, 0x40, 0x86},
    {0x3b, 0x52, 0x8b},
    {0x33, 0x63, 0x8d},
    {0x2c, 0x72, 0x8e},
    {0x26, 0x82, 0x8e},
    {0x21, 0x91, 0x8c},
    {0x1f, 0x9f, 0x88},
    {0x27, 0xad, 0x81},
    {0x3d, 0xbc, 0x74},
    {0x5c, 0xc8, 0x63},
    {0x81, 0xd3, 0x4d},
    {0xaa, 0xdc, 0x32},
    {0xd5, 0xe2, 0x1a},
    {0xfd, 0xe7, 0x25},
}};

std::string Hex(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

uint8_t Mix(uint8_t a, uint8_t b, double f) {
  return static_cast<uint8_t>(std::lround(a + (static_cast<double>(b) - a) * f));
}

}  // namespace

std::string SeriesColor(int i) {
  const int n = static_cast<int>(kOkabeIto.size());
  return Hex(kOkabeIto[static_cast<size_t>(((i % n) + n) % n)]);
}

std::string SequentialColor(double t) {
  if (std::isnan(t)) t = 0;
  const double pos = std::clamp(t, 0.0, 1.0) * (kViridis.size() - 1);
  const size_t i = std::min(static_cast<size_t>(pos), kViridis.size() - 2);
  const double f = pos - static_cast<double>(i);
  const Rgb a = kViridis[i], b = kViridis[i + 1];
  return Hex({Mix(a.r, b.r, f), Mix(a.g, b.g, f), Mix(a.b, b.b, f)});
}

}  // namespace kvaudit::report
