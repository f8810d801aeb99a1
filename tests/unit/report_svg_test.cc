// The line chart (report/svg_line_chart.h) read back as XML: one marker per finite point whose
// data-* attributes are the inputs, tooltips, bands, series groups, the threshold, log-y clipping,
// the "no data" figure; and for every renderer, determinism and a self-contained, accessible svg.
#include <gtest/gtest.h>
#include <tinyxml2.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "report/svg_bar_chart.h"
#include "report/svg_heatmap.h"
#include "report/svg_line_chart.h"
#include "report/svg_scatter.h"
#include "unit/report_svg_checks.h"

namespace kvaudit::report {
namespace {

using namespace testing;  // NOLINT: the test helpers of report_svg_checks.h

LineChart KldChart() {
  LineChart c;
  c.id = "kld-vs-context";
  c.title = "KLD against context";
  c.x_label = "context length (tokens)", c.y_label = "mean KLD (nats)";
  LineSeries a{"k=q4_0,v=q4_0", 0, {512, 1024, 2048, 4096, 8192}, {0.011, 0.0123, NAN, 0.031, 0.044}, {}, {}};
  a.lo = {0.009, 0.010, NAN, 0.027, 0.040};
  a.hi = {0.013, 0.014, NAN, 0.035, 0.049};
  LineSeries b{"k=<q8&0>,v=\"f16\"", 1, {4096, 512, 2048}, {0.002, 0.001, 0.0015}, {}, {}};  // unsorted x
  c.series = {a, b};
  c.threshold = 0.05, c.threshold_label = "policy limit 0.05";
  return c;
}

TEST(ReportLineChart, OneMarkerPerFinitePointWithTheRawValues) {
  const LineChart c = KldChart();
  tinyxml2::XMLDocument doc;
  const Element* root = ParseChart(RenderLineChart(c), &doc);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(AttrOf(root, "id"), "kld-vs-context");
  const auto circles = All(root, "circle", "data-x");
  ASSERT_EQ(circles.size(), 4u + 3u);  // the NaN y of the first series is a gap, not a marker
  size_t matched = 0;
  for (const LineSeries& s : c.series) {
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (std::isnan(s.y[i])) continue;
      for (const Element* e : circles) {
        if (AttrOf(e, "data-series") != s.name || NumberAttr(e, "data-x") != s.x[i]) continue;
        EXPECT_EQ(NumberAttr(e, "data-y"), s.y[i]);  // %.17g: exactly the input
        EXPECT_NE(TitleOf(e).find(s.name + " \u2014 x: "), std::string::npos) << TitleOf(e);
        ++matched;
      }
    }
  }
  EXPECT_EQ(matched, circles.size());
  // The tooltip of a point with a band gives the interval.
  for (const Element* e : circles) {
    if (AttrOf(e, "data-x") == "1024") {
      EXPECT_EQ(TitleOf(e), "k=q4_0,v=q4_0 \u2014 x: 1024, y: 0.0123 [0.01, 0.014]");
    }
  }
}

TEST(ReportLineChart, SeriesGroupsBandsLegendAndGaps) {
  const LineChart c = KldChart();
  tinyxml2::XMLDocument doc;
  const Element* root = ParseChart(RenderLineChart(c), &doc);
  ASSERT_NE(root, nullptr);
  std::vector<std::string> groups;
  for (const Element* g : All(root, "g", "data-series")) {
    if (AttrOf(g, "class") == "series") groups.push_back(AttrOf(g, "data-series"));
  }
  EXPECT_EQ(groups, (std::vector<std::string>{c.series[0].name, c.series[1].name}));  // names escaped and read back
  std::vector<std::string> legend;
  for (const Element* g : All(root, "g", "data-series")) {
    if (AttrOf(g, "class") == "legend-item") legend.push_back(AttrOf(g, "data-series"));
  }
  EXPECT_EQ(legend, groups);
  // One band (the second series has none), split in two runs around the NaN: two closed subpaths.
  const auto paths = All(root, "path", "class");
  int bands = 0, lines = 0;
  for (const Element* p : paths) {
    const std::string cls = AttrOf(p, "class"), d = AttrOf(p, "d");
    if (cls == "band") {
      ++bands;
      EXPECT_EQ(std::count(d.begin(), d.end(), 'Z'), 2) << d;
    } else if (cls == "line" && ++lines == 1) {
      EXPECT_EQ(std::count(d.begin(), d.end(), 'M'), 2) << d;  // the gap breaks the line
    }
  }
  EXPECT_EQ(bands, 1);
  EXPECT_EQ(lines, 2);
  EXPECT_TRUE(HasText(root, "context length (tokens)"));
  EXPECT_TRUE(HasText(root, "mean KLD (nats)"));
  EXPECT_TRUE(HasText(root, "KLD against context"));
  EXPECT_TRUE(HasText(root, "32k") || HasText(root, "1k"));  // log2 ticks as context lengths
}

TEST(ReportLineChart, ThresholdIsADashedLineWithItsLabel) {
  tinyxml2::XMLDocument doc;
  const Element* root = ParseChart(RenderLineChart(KldChart()), &doc);
  ASSERT_NE(root, nullptr);
  const Element* th = nullptr;
  for (const Element* g : All(root, "g", "class")) {
    if (AttrOf(g, "class") == "threshold") th = g;
  }
  ASSERT_NE(th, nullptr);
  EXPECT_EQ(NumberAttr(th, "data-value"), 0.05);
  const Element* line = th->FirstChildElement("line");
  ASSERT_NE(line, nullptr);
  EXPECT_FALSE(AttrOf(line, "stroke-dasharray").empty());
  EXPECT_EQ(NumberAttr(line, "y1"), NumberAttr(line, "y2"));  // horizontal
  ASSERT_NE(th->FirstChildElement("text"), nullptr);
  EXPECT_STREQ(th->FirstChildElement("text")->GetText(), "policy limit 0.05");
  // Above every point (the largest y is 0.049 and its band 0.049): the line is inside the frame.
  for (const Element* e : All(root, "circle", "data-y")) EXPECT_GT(NumberAttr(e, "cy"), NumberAttr(line, "y1"));
}

TEST(ReportLineChart, LogYClipsNonPositiveValuesAndSaysSo) {
  LineChart c;
  c.id = "log", c.log_y = true, c.x_scale = LineChart::XScale::kLinear;
  c.series = {{"s", 0, {1, 2, 3}, {0, 1e-4, 1e-2}, {}, {}}};
  tinyxml2::XMLDocument doc;
  const Element* root = ParseChart(RenderLineChart(c), &doc);
  ASSERT_NE(root, nullptr);
  const auto circles = All(root, "circle", "data-y");
  ASSERT_EQ(circles.size(), 3u);
  EXPECT_EQ(AttrOf(circles[0], "data-y"), "0");                           // the raw value stays
  EXPECT_EQ(NumberAttr(circles[0], "cy"), NumberAttr(circles[1], "cy"));  // drawn at the smallest positive
  EXPECT_GT(NumberAttr(circles[1], "cy"), NumberAttr(circles[2], "cy"));
  EXPECT_TRUE(HasText(root, "1 value \u2264 0 drawn at 0.0001 (log scale)"));
}

TEST(ReportLineChart, AnInfiniteValueIsAGapThatIsNoted) {
  LineChart c;
  c.id = "inf";
  c.series = {{"s", 0, {512, 1024, 2048}, {0.01, INFINITY, 0.02}, {}, {}}};
  tinyxml2::XMLDocument doc;
  const Element* root = ParseChart(RenderLineChart(c), &doc);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(All(root, "circle", "data-y").size(), 2u);
  EXPECT_TRUE(HasText(root, "1 point with an infinite y not drawn"));
}

TEST(ReportLineChart, NoFinitePointIsNoData) {
  LineChart empty;
  empty.id = "empty", empty.title = "nothing yet";
  LineChart nan_only = empty;
  nan_only.series = {{"s", 0, {1, 2}, {NAN, NAN}, {}, {}}};
  LineChart log_x_only_zero = empty;
  log_x_only_zero.series = {{"s", 0, {0}, {1}, {}, {}}};  // x = 0 has no place on a log2 axis
  for (const LineChart& c : {empty, nan_only, log_x_only_zero}) {
    tinyxml2::XMLDocument doc;
    const std::string svg = RenderLineChart(c);
    const Element* root = ParseChart(svg, &doc);
    ASSERT_NE(root, nullptr);
    EXPECT_EQ(AttrOf(root, "id"), "empty");
    EXPECT_TRUE(HasText(root, "no data")) << svg;
    EXPECT_TRUE(HasText(root, "nothing yet"));
    EXPECT_TRUE(All(root, "circle").empty());
  }
}

// Every renderer: the same input gives the same bytes, and the output is a self-contained svg.
TEST(ReportSvg, EveryRendererIsDeterministicAndSelfContained) {
  Heatmap h{"h", "errors", {"L0", "L1"}, {"h0", "h1"}, {0.1, NAN, 0.3, 0.4}, 0, 1, false, "rel. error", 22, true};
  Scatter s;
  s.id = "front",
  s.series = {{"front", 0, true, {{1000, 0.01, "a"}, {2000, 0.001, "b", ScatterPoint::Mark::kRecommended}}}};
  BarChart b{"bars", "sensitivity", "layer", "ΔKLD", {"K", "V"}, {{"L0", {0.1, 0.2}}, {"L1", {0.3, NAN}}}};
  const std::vector<std::string> outputs = {RenderLineChart(KldChart()), RenderHeatmap(h), RenderScatter(s),
                                            RenderBarChart(b), RenderColorScale(1e-4, 1e-1, true, "error")};
  const std::vector<std::string> again = {RenderLineChart(KldChart()), RenderHeatmap(h), RenderScatter(s),
                                          RenderBarChart(b), RenderColorScale(1e-4, 1e-1, true, "error")};
  EXPECT_EQ(outputs, again);
  for (const std::string& svg : outputs) {
    tinyxml2::XMLDocument doc;
    EXPECT_NE(ParseChart(svg, &doc), nullptr);
    EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;  // no NaN leaks into a coordinate
  }
}

}  // namespace
}  // namespace kvaudit::report
