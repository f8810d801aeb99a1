// The heatmap, colour scale, scatter and bar chart of the report (report/svg_heatmap.h,
// svg_scatter.h, svg_bar_chart.h) read back as XML: one element per cell, point or bar whose
// data-* attributes are the inputs, not-measured values drawn as such, marks told by shape.
#include <gtest/gtest.h>
#include <tinyxml2.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "report/palette.h"
#include "report/svg_bar_chart.h"
#include "report/svg_heatmap.h"
#include "report/svg_scatter.h"
#include "unit/report_svg_checks.h"

namespace kvaudit::report {
namespace {

using namespace testing;  // NOLINT: the test helpers of report_svg_checks.h

Heatmap ErrorMap() {
  Heatmap h;
  h.id = "attn-error", h.title = "attention error per layer and KV head";
  h.row_labels = {"L0", "L1", "L2"}, h.col_labels = {"h0", "h1"};
  h.values = {0.0, 0.0123, NAN, 0.5, 1.0, 0.25};
  h.value_label = "attention-output relative error";
  return h;
}

TEST(ReportHeatmap, OneRectPerCellWithItsValue) {
  const Heatmap h = ErrorMap();
  tinyxml2::XMLDocument doc;
  const Element* root = ParseChart(RenderHeatmap(h), &doc);
  ASSERT_NE(root, nullptr);
  const auto cells = All(root, "rect", "data-value");
  ASSERT_EQ(cells.size(), 6u);
  for (size_t i = 0; i < cells.size(); ++i) {
    const Element* e = cells[i];
    EXPECT_EQ(AttrOf(e, "data-row"), h.row_labels[i / 2]);
    EXPECT_EQ(AttrOf(e, "data-col"), h.col_labels[i % 2]);
    if (std::isnan(h.values[i])) continue;
    EXPECT_EQ(NumberAttr(e, "data-value"), h.values[i]);
    EXPECT_EQ(AttrOf(e, "fill"), SequentialColor(h.values[i]));  // vmin 0, vmax 1: t is the value
  }
  EXPECT_EQ(TitleOf(cells[1]), "L0 h1: 0.0123");
  EXPECT_EQ(AttrOf(cells[0], "fill"), "#440154");  // vmin: viridis' dark end
  EXPECT_EQ(AttrOf(cells[4], "fill"), "#fde725");  // vmax: its light end
}

TEST(ReportHeatmap, NotMeasuredCellsAreGreyHatchedAndSaySo) {
  Heatmap h = ErrorMap();
  h.values.pop_back();  // a short values vector: the last cell is not measured either
  tinyxml2::XMLDocument doc;
  const Element* root = ParseChart(RenderHeatmap(h), &doc);
  ASSERT_NE(root, nullptr);
  std::vector<const Element*> not_measured;
  for (const Element* e : All(root, "rect", "data-value")) {
    if (AttrOf(e, "class") == "not-measured") not_measured.push_back(e);
  }
  ASSERT_EQ(not_measured.size(), 2u);
  EXPECT_EQ(AttrOf(not_measured[0], "data-value"), "NaN");
  EXPECT_EQ(TitleOf(not_measured[0]), "L1 h0: not measured");
  EXPECT_EQ(TitleOf(not_measured[1]), "L2 h1: not measured");
  EXPECT_NE(AttrOf(not_measured[0], "fill"), SequentialColor(0));
  bool hatch = false;
  for (const Element* p : All(root, "path", "class")) hatch = hatch || AttrOf(p, "class") == "hatch";
  EXPECT_TRUE(hatch);
  EXPECT_TRUE(HasText(root, "not measured"));
}

TEST(ReportHeatmap, LogScaleColoursByDecadeAndTheScaleBarHasTicks) {
  Heatmap h = ErrorMap();
  h.values = {1e-4, 1e-3, 1e-2, 1e-1, 0, NAN};
  h.vmin = 1e-4, h.vmax = 1e-1, h.log_scale = true, h.color_scale = true;
  EXPECT_DOUBLE_EQ(ScalePosition(1e-3, h.vmin, h.vmax, true), 1.0 / 3);
  EXPECT_EQ(ScalePosition(0, h.vmin, h.vmax, true), 0);
  EXPECT_EQ(ScalePosition(2, 0, 1, false), 1);  // clamped
  tinyxml2::XMLDocument doc;
  const Element* root = ParseChart(RenderHeatmap(h), &doc);
  ASSERT_NE(root, nullptr);
  const auto cells = All(root, "rect", "data-value");
  ASSERT_EQ(cells.size(), 6u);
  EXPECT_EQ(AttrOf(cells[1], "fill"), SequentialColor(1.0 / 3));
  EXPECT_EQ(AttrOf(cells[4], "fill"), SequentialColor(0));        // 0 on a log scale: the bottom
  EXPECT_TRUE(HasText(root, "attention-output relative error"));  // the scale bar's label

  tinyxml2::XMLDocument bar_doc;
  const Element* bar = ParseChart(RenderColorScale(1e-4, 1e-1, true, "relative error"), &bar_doc);
  ASSERT_NE(bar, nullptr);
  EXPECT_TRUE(HasText(bar, "relative error"));
  for (const char* tick : {"0.0001", "0.001", "0.01", "0.1"}) EXPECT_TRUE(HasText(bar, tick)) << tick;
  EXPECT_TRUE(All(bar, "rect", "data-value").empty());  // the bar's steps are no cells
}

TEST(ReportHeatmap, NoRowsOrColumnsIsNoData) {
  Heatmap h;
  h.id = "none";
  tinyxml2::XMLDocument doc;
  const Element* root = ParseChart(RenderHeatmap(h), &doc);
  ASSERT_NE(root, nullptr);
  EXPECT_TRUE(HasText(root, "no data"));
}

Scatter Front() {
  using Mark = ScatterPoint::Mark;
  Scatter s;
  s.id = "pareto", s.title = "memory against fidelity";
  s.x_label = "KV bytes per token (B)", s.y_label = "mean KLD (nats)";
  s.x_marker = 3000, s.x_marker_label = "budget 3000 B";
  s.y_marker = 0.05, s.y_marker_label = "policy limit 0.05";
  s.series = {{"per-layer",
               0,
               true,
               {{4352, 0.0004, "k=q8_0"},
                {2176, 0.02, "k=<q4&0>", Mark::kVerifiedPass},
                {1632, 0.09, "k=q3", Mark::kVerifiedFail},
                {2720, 0.008, "mix", Mark::kRecommended}}},
              {"uniform", 1, false, {{4352, 0.0005, "u8"}, {NAN, 0.1, "broken"}}}};
  return s;
}

TEST(ReportScatter, OneMarkerPerPointShapedByItsMark) {
  const Scatter s = Front();
  tinyxml2::XMLDocument doc;
  const Element* root = ParseChart(RenderScatter(s), &doc);
  ASSERT_NE(root, nullptr);
  const auto marks = All(root, nullptr, "data-mark");
  ASSERT_EQ(marks.size(), 5u);  // the point with x = NaN is not drawn
  const std::map<std::string, std::string> shape = {
      {"front", "circle"}, {"pass", "rect"}, {"fail", "path"}, {"recommended", "path"}};
  std::map<std::string, const Element*> by_label;
  for (const Element* e : marks) {
    EXPECT_EQ(e->Name(), shape.at(AttrOf(e, "data-mark"))) << AttrOf(e, "data-mark");
    EXPECT_FALSE(TitleOf(e).empty());
    by_label[AttrOf(e, "data-label")] = e;
  }
  for (const ScatterSeries& series : s.series) {
    for (const ScatterPoint& p : series.points) {
      if (!std::isfinite(p.x)) continue;
      ASSERT_TRUE(by_label.count(p.label)) << p.label;
      const Element* e = by_label[p.label];
      EXPECT_EQ(NumberAttr(e, "data-x"), p.x);
      EXPECT_EQ(NumberAttr(e, "data-y"), p.y);
      EXPECT_EQ(AttrOf(e, "data-mark"), MarkName(p.mark));
      EXPECT_EQ(AttrOf(e, "data-series"), series.name);
    }
  }
  EXPECT_EQ(TitleOf(by_label["mix"]), "mix (per-layer) \u2014 x: 2720, y: 0.008; recommended");
  // The star is larger than the other marks, and the recommended point is drawn last.
  EXPECT_EQ(AttrOf(All(by_label["mix"]->Parent()->ToElement(), nullptr, "data-mark").back(), "data-label"), "mix");
}

TEST(ReportScatter, MarkersLegendAndConnectingLine) {
  tinyxml2::XMLDocument doc;
  const Element* root = ParseChart(RenderScatter(Front()), &doc);
  ASSERT_NE(root, nullptr);
  std::map<std::string, const Element*> refs;
  for (const Element* g : All(root, "g", "class")) refs[AttrOf(g, "class")] = g;
  ASSERT_TRUE(refs.count("x-marker") && refs.count("y-marker"));
  EXPECT_STREQ(refs["x-marker"]->FirstChildElement("text")->GetText(), "budget 3000 B");
  EXPECT_STREQ(refs["y-marker"]->FirstChildElement("text")->GetText(), "policy limit 0.05");
  const Element* vline = refs["x-marker"]->FirstChildElement("line");
  EXPECT_EQ(NumberAttr(vline, "x1"), NumberAttr(vline, "x2"));  // vertical
  for (const char* m : {"on the front", "verified: pass", "verified: fail", "recommended"})
    EXPECT_TRUE(HasText(root, m)) << m;
  int lines = 0;
  for (const Element* p : All(root, "path", "class")) lines += AttrOf(p, "class") == "line";
  EXPECT_EQ(lines, 1);  // "uniform" has connect = false
}

TEST(ReportScatter, NoFinitePointIsNoData) {
  Scatter s;
  s.id = "none", s.series = {{"x", 0, true, {{NAN, 1, "a"}}}};
  tinyxml2::XMLDocument doc;
  const Element* root = ParseChart(RenderScatter(s), &doc);
  ASSERT_NE(root, nullptr);
  EXPECT_TRUE(HasText(root, "no data"));
}

BarChart Sensitivity() {
  BarChart b;
  b.id = "sensitivity", b.title = "sensitivity per layer";
  b.x_label = "layer", b.y_label = "\u0394KLD when quantized alone (nats)";
  b.series_names = {"K", "V"};
  b.groups = {{"L0", {0.02, 0.005}}, {"L1", {0.5, NAN}}, {"L2", {-0.001, 0.01}}};
  return b;
}

TEST(ReportBarChart, OneRectPerBarWithItsValue) {
  const BarChart b = Sensitivity();
  tinyxml2::XMLDocument doc;
  const Element* root = ParseChart(RenderBarChart(b), &doc);
  ASSERT_NE(root, nullptr);
  const auto bars = All(root, "rect", "data-group");
  ASSERT_EQ(bars.size(), 6u);
  // Grouped by series (K bars, then V bars) so a script can toggle a series.
  for (size_t k = 0; k < bars.size(); ++k) {
    const size_t s = k / 3, g = k % 3;
    const Element* e = bars[k];
    EXPECT_EQ(AttrOf(e, "data-series"), b.series_names[s]);
    EXPECT_EQ(AttrOf(e, "data-group"), b.groups[g].label);
    EXPECT_EQ(AttrOf(e->Parent()->ToElement(), "class"), "series");
    if (std::isnan(b.groups[g].values[s])) {
      EXPECT_EQ(AttrOf(e, "class"), "not-measured");
      EXPECT_EQ(AttrOf(e, "data-value"), "NaN");
      EXPECT_EQ(TitleOf(e), "L1 V: not measured");
      continue;
    }
    EXPECT_EQ(NumberAttr(e, "data-value"), b.groups[g].values[s]);
    EXPECT_EQ(AttrOf(e, "fill"), SeriesColor(static_cast<int>(s)));
  }
  EXPECT_EQ(TitleOf(bars[1]), "L1 K: 0.5");
  // Taller value, taller bar; the negative bar hangs below the positive ones' baseline.
  EXPECT_GT(NumberAttr(bars[1], "height"), NumberAttr(bars[0], "height"));
  EXPECT_GE(NumberAttr(bars[2], "y"), NumberAttr(bars[0], "y") + NumberAttr(bars[0], "height") - 0.01);
}

TEST(ReportBarChart, LogYAndNoData) {
  BarChart b = Sensitivity();
  b.log_y = true;
  tinyxml2::XMLDocument doc;
  const Element* root = ParseChart(RenderBarChart(b), &doc);
  ASSERT_NE(root, nullptr);
  EXPECT_TRUE(HasText(root, "1 value \u2264 0 drawn at 0.005 (log scale)"));
  BarChart empty;
  empty.id = "none", empty.series_names = {"K"}, empty.groups = {{"L0", {NAN}}};
  tinyxml2::XMLDocument doc2;
  const Element* none = ParseChart(RenderBarChart(empty), &doc2);
  ASSERT_NE(none, nullptr);
  EXPECT_TRUE(HasText(none, "no data"));
}

}  // namespace
}  // namespace kvaudit::report
