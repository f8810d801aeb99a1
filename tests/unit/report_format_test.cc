// The report's text primitives: numbers (report/number_format.h) print locale-free and parse back,
// EscapeHtml (report/html_escape.h) escapes markup and repairs invalid UTF-8, and the palettes
// (report/palette.h) are the published Okabe-Ito colours and viridis.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>

#include "report/html_escape.h"
#include "report/number_format.h"
#include "report/palette.h"

namespace kvaudit::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(ReportFormat, SigPrintsLikePercentG) {
  EXPECT_EQ(FormatSig(0.0123), "0.0123");
  EXPECT_EQ(FormatSig(1.0 / 3), "0.3333");
  EXPECT_EQ(FormatSig(12346.0), "1.235e+04");
  EXPECT_EQ(FormatSig(4096.0), "4096");
  EXPECT_EQ(FormatSig(0.05, 2), "0.05");
  EXPECT_EQ(FormatSig(-0.0), "0");
  EXPECT_EQ(FormatSig(kNaN), "\u2013");
  EXPECT_EQ(FormatSig(kInf), "inf");
  EXPECT_EQ(FormatSig(-kInf), "-inf");
}

// strtod of the text is the value rounded to sig significant digits: what %.{sig}e gives.
TEST(ReportFormat, SigRoundTripsToSigDigits) {
  const double values[] = {1.0 / 3, 2.0 / 3, 123456.789, -0.000123456789, 6.02214076e23, 1e-300, 0.05, 7.0, -42.125};
  for (double v : values) {
    for (int sig = 1; sig <= 17; ++sig) {
      const std::string s = FormatSig(v, sig);
      char* end = nullptr;
      const double back = std::strtod(s.c_str(), &end);
      ASSERT_EQ(*end, '\0') << s;
      char ref[64];
      std::snprintf(ref, sizeof ref, "%.*e", sig - 1, v);
      EXPECT_EQ(back, std::strtod(ref, nullptr)) << v << " sig " << sig << ": " << s;
    }
  }
  EXPECT_EQ(std::strtod(FormatSig(kInf).c_str(), nullptr), kInf);
}

TEST(ReportFormat, FixedBytesContext) {
  EXPECT_EQ(FormatFixed(3.14159, 2), "3.14");
  EXPECT_EQ(FormatFixed(2.6, 0), "3");
  EXPECT_EQ(FormatFixed(-0.001, 2), "0.00");
  EXPECT_EQ(FormatFixed(kNaN, 2), "\u2013");
  EXPECT_EQ(FormatBytes(2176), "2176 B");
  EXPECT_EQ(FormatBytes(2176.5), "2176.5 B");
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(10240), "10 KiB");
  EXPECT_EQ(FormatBytes(1.5 * 1024 * 1024 * 1024), "1.5 GiB");
  EXPECT_EQ(FormatBytes(12.34 * 1024 * 1024), "12.3 MiB");
  EXPECT_EQ(FormatBytes(1023.999 * 1024 * 1024), "1 GiB");  // never "1024 MiB"
  EXPECT_EQ(FormatContext(512), "512");
  EXPECT_EQ(FormatContext(1024), "1k");
  EXPECT_EQ(FormatContext(32768), "32k");
  EXPECT_EQ(FormatContext(1000), "1000");
  EXPECT_EQ(FormatContext(1536), "1536");
  EXPECT_EQ(FormatContext(0), "0");
}

TEST(ReportFormat, RawRoundTripsEveryDouble) {
  const double values[] = {0.1, 1.0 / 3, 4096, -2.5e-310, 1.7976931348623157e308, 0.0123};
  for (double v : values) EXPECT_EQ(std::strtod(FormatRaw(v).c_str(), nullptr), v) << FormatRaw(v);
  EXPECT_EQ(FormatRaw(kNaN), "NaN");
  EXPECT_EQ(FormatRaw(kInf), "Infinity");
  EXPECT_EQ(FormatRaw(-kInf), "-Infinity");
  EXPECT_TRUE(std::isnan(std::strtod(FormatRaw(kNaN).c_str(), nullptr)));
  EXPECT_EQ(std::strtod(FormatRaw(-kInf).c_str(), nullptr), -kInf);
}

TEST(ReportEscape, MarkupAndQuotes) {
  EXPECT_EQ(EscapeHtml("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  EXPECT_EQ(EscapeHtml("k=q4_0,v=q4_0"), "k=q4_0,v=q4_0");
  EXPECT_EQ(EscapeHtml(""), "");
}

TEST(ReportEscape, InvalidUtf8BecomesReplacementCharacters) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(EscapeHtml("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");  // valid, kept
  EXPECT_EQ(EscapeHtml("a\xFF"
                       "b"),
            "a" + r + "b");                                  // a byte that starts nothing
  EXPECT_EQ(EscapeHtml("x\xC3"), "x" + r);                   // truncated at the end
  EXPECT_EQ(EscapeHtml("\xC3<"), r + "&lt;");                // truncated, then markup
  EXPECT_EQ(EscapeHtml("\xC0\xAF"), r + r);                  // overlong '/'
  EXPECT_EQ(EscapeHtml("\xED\xA0\x80"), r + r + r);          // a surrogate
  EXPECT_EQ(EscapeHtml("\xF4\x90\x80\x80"), r + r + r + r);  // above U+10FFFF
  EXPECT_EQ(EscapeHtml("\x80"), r);                          // a lone continuation byte
  EXPECT_EQ(EscapeHtml("a\x01\tb\n"), "a" + r + "\tb\n");    // XML forbids \x01, not tab/newline
  EXPECT_EQ(EscapeHtml("\xEF\xBF\xBF"), r);                  // U+FFFF: no XML character
}

int Luma(const std::string& hex) {
  const long v = std::strtol(hex.c_str() + 1, nullptr, 16);
  return static_cast<int>(299 * ((v >> 16) & 255) + 587 * ((v >> 8) & 255) + 114 * (v & 255));
}

TEST(ReportPalette, EightDistinctOkabeItoColoursThatWrap) {
  std::set<std::string> seen;
  for (int i = 0; i < 8; ++i) {
    const std::string c = SeriesColor(i);
    ASSERT_EQ(c.size(), 7u) << c;
    EXPECT_EQ(c[0], '#');
    seen.insert(c);
  }
  EXPECT_EQ(seen.size(), 8u);
  EXPECT_TRUE(seen.count("#e69f00") && seen.count("#56b4e9") && seen.count("#009e73") && seen.count("#f0e442") &&
              seen.count("#0072b2") && seen.count("#d55e00") && seen.count("#cc79a7") && seen.count("#000000"));
  EXPECT_EQ(SeriesColor(8), SeriesColor(0));
  EXPECT_EQ(SeriesColor(-1), SeriesColor(7));
}

TEST(ReportPalette, ViridisEndsMiddleAndMonotonicLightness) {
  EXPECT_EQ(SequentialColor(0), "#440154");
  EXPECT_EQ(SequentialColor(1), "#fde725");
  EXPECT_EQ(SequentialColor(0.5), "#21918c");
  EXPECT_EQ(SequentialColor(-3), SequentialColor(0));
  EXPECT_EQ(SequentialColor(7), SequentialColor(1));
  EXPECT_EQ(SequentialColor(std::nan("")), SequentialColor(0));
  // Printed in grey, a higher value is a lighter grey all the way up.
  int last = -1;
  for (int i = 0; i <= 200; ++i) {
    const int luma = Luma(SequentialColor(i / 200.0));
    EXPECT_GE(luma, last) << i;
    last = luma;
  }
}

}  // namespace
}  // namespace kvaudit::report
