// Scales and ticks of the report's charts (report/svg_axis.h): 1-2-5 linear ticks that are the
// decimal values themselves, powers of two and of ten on log axes, their fallbacks and labels.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "report/svg_axis.h"

namespace kvaudit::report {
namespace {

TEST(ReportAxis, Log2TicksArePowersOfTwoInside) {
  EXPECT_EQ(Log2Ticks(100, 4096), (std::vector<double>{128, 256, 512, 1024, 2048, 4096}));
  EXPECT_EQ(Log2Ticks(0.2, 1), (std::vector<double>{0.25, 0.5, 1}));
  EXPECT_TRUE(Log2Ticks(100, 150).empty());
  // 31 powers thinned to exponents that are multiples of 4: at most 10 ticks.
  const std::vector<double> thin = Log2Ticks(1, std::ldexp(1.0, 30), 10);
  ASSERT_FALSE(thin.empty());
  EXPECT_LE(thin.size(), 10u);
  for (double t : thin) EXPECT_EQ(std::ilogb(t) % 4, 0) << t;
}

TEST(ReportAxis, LinearTicksAreNiceDecimals) {
  EXPECT_EQ(LinearTicks(0, 0.037), (std::vector<double>{0, 0.01, 0.02, 0.03}));
  EXPECT_EQ(LinearTicks(0, 0.04), (std::vector<double>{0, 0.01, 0.02, 0.03, 0.04}));
  EXPECT_EQ(LinearTicks(100, 300), (std::vector<double>{100, 150, 200, 250, 300}));
  EXPECT_EQ(LinearTicks(-1, 1), (std::vector<double>{-1, -0.5, 0, 0.5, 1}));
  EXPECT_EQ(LinearTicks(0, 9e-5), (std::vector<double>{0, 2e-5, 4e-5, 6e-5, 8e-5}));
  EXPECT_TRUE(LinearTicks(1, 1).empty());
  const Domain d = NiceDomain(ScaleKind::kLinear, 0.004, 0.037, true);
  EXPECT_EQ(d.lo, 0);
  EXPECT_EQ(d.hi, 0.04);
  const Domain flat = NiceDomain(ScaleKind::kLinear, 5, 5, false);
  EXPECT_LT(flat.lo, 5);
  EXPECT_GT(flat.hi, 5);
}

TEST(ReportAxis, Log10TicksDecadesOrOneTwoFive) {
  EXPECT_EQ(Log10Ticks(1e-4, 0.2), (std::vector<double>{1e-4, 1e-3, 1e-2, 0.1}));
  EXPECT_EQ(Log10Ticks(0.003, 0.08), (std::vector<double>{0.005, 0.01, 0.02, 0.05}));
  const Domain d = NiceDomain(ScaleKind::kLog10, 1e-3, 1e-1, false);
  EXPECT_LT(d.lo, 1e-3);
  EXPECT_GT(d.hi, 1e-1);
}

TEST(ReportAxis, AxisTicksFallBackToLinearOnShortLogRanges) {
  // Under two octaves a log2 axis gets linear ticks; a log10 axis inside one decade too.
  std::vector<double> values;
  for (const Tick& t : AxisTicks(ScaleKind::kLog2, 100, 300)) values.push_back(t.value);
  EXPECT_EQ(values, LinearTicks(100, 300));
  values.clear();
  for (const Tick& t : AxisTicks(ScaleKind::kLog10, 0.011, 0.019)) values.push_back(t.value);
  EXPECT_EQ(values, LinearTicks(0.011, 0.019));
  const std::vector<Tick> ctx = AxisTicks(ScaleKind::kLog2, 512, 32768);
  ASSERT_EQ(ctx.size(), 7u);
  EXPECT_EQ(ctx.front().label, "512");
  EXPECT_EQ(ctx[1].label, "1k");
  EXPECT_EQ(ctx.back().label, "32k");
}

TEST(ReportAxis, TickLabelsAndMapping) {
  EXPECT_EQ(TickLabel(ScaleKind::kLog2, 32768), "32k");
  EXPECT_EQ(TickLabel(ScaleKind::kLog2, 0.5), "0.5");
  EXPECT_EQ(TickLabel(ScaleKind::kLinear, 0.03), "0.03");
  EXPECT_EQ(TickLabel(ScaleKind::kLog10, 10000), "10000");
  EXPECT_EQ(TickLabel(ScaleKind::kLog10, 1e-5), "1e-05");
  const Scale lin{ScaleKind::kLinear, 0, 10, 100, 200};
  EXPECT_DOUBLE_EQ(lin.Map(5), 150);
  const Scale log2{ScaleKind::kLog2, 1, 4, 0, 100};
  EXPECT_DOUBLE_EQ(log2.Map(2), 50);
  const Scale y{ScaleKind::kLog10, 1e-3, 1e-1, 300, 100};  // y grows down
  EXPECT_DOUBLE_EQ(y.Map(1e-2), 200);
  EXPECT_DOUBLE_EQ(y.Map(0), 300);  // a log axis puts v <= 0 at its bottom
}

}  // namespace
}  // namespace kvaudit::report
