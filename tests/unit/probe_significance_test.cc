// Holm's step-down correction and the pooled McNemar test on hand-made tables with known answers
// (docs/probes.md "Multiple comparisons"): adjusted p-values of a known vector, their monotonicity,
// cells that can never be rejected, the pooled test as McNemar on the summed counts, and the
// per-configuration families of the probe report.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <tuple>
#include <vector>

#include "probe/attribution_table.h"
#include "probe/mcnemar.h"
#include "probe/significance.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {

ProbeAttribution Cell(int64_t cache_induced, int64_t recovered, int64_t both_pass = 0, int64_t both_fail = 0) {
  return AttributionFromCounts(both_pass, cache_induced, recovered, both_fail);
}

TEST(HolmTest, KnownVector) {
  // Sorted: 0.005 (×4 = 0.02), 0.01 (×3 = 0.03), 0.03 (×2 = 0.06), 0.04 (×1 = 0.04 → 0.06 by the
  // running max). At α = 0.05 the first two are rejected; the step-down stops at 0.03 > 0.05/2.
  const std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  const std::vector<double> adj = HolmAdjust(p);
  ASSERT_EQ(adj.size(), 4u);
  EXPECT_DOUBLE_EQ(adj[0], 0.03);
  EXPECT_DOUBLE_EQ(adj[1], 0.06);
  EXPECT_DOUBLE_EQ(adj[2], 0.06);
  EXPECT_DOUBLE_EQ(adj[3], 0.02);
  std::vector<bool> rejected;
  for (double a : adj) rejected.push_back(a < 0.05);
  EXPECT_EQ(rejected, (std::vector<bool>{true, false, false, true}));
  // Uncorrected, all four would be below 0.05.
  EXPECT_TRUE(std::all_of(p.begin(), p.end(), [](double x) { return x < 0.05; }));
}

TEST(HolmTest, EdgeCases) {
  EXPECT_TRUE(HolmAdjust({}).empty());
  EXPECT_EQ(HolmAdjust(std::vector<double>{0.02}), std::vector<double>{0.02});            // a family of one
  EXPECT_EQ(HolmAdjust(std::vector<double>{0.6, 0.7}), (std::vector<double>{1.0, 1.0}));  // capped at 1
  // Ties keep one adjusted value: both 0.01 × 2 = 0.02 (the second by the running max).
  EXPECT_EQ(HolmAdjust(std::vector<double>{0.01, 0.01}), (std::vector<double>{0.02, 0.02}));
}

TEST(HolmTest, AdjustedValuesAreMonotoneAndBounded) {
  testing::Rng rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t m = 1 + rng.Below(40);
    std::vector<double> p(m);
    // Some exact ties and some p = 1, as McNemar gives on small tables.
    for (double& x : p) x = rng.Below(5) == 0 ? 1.0 : static_cast<double>(rng.Below(64)) / 256.0;
    const std::vector<double> adj = HolmAdjust(p);
    for (size_t i = 0; i < m; ++i) {
      EXPECT_GE(adj[i], p[i]);
      EXPECT_LE(adj[i], 1.0);
      for (size_t j = 0; j < m; ++j) {
        if (p[i] <= p[j]) {
          EXPECT_LE(adj[i], adj[j]) << "trial " << trial;  // the order of p is kept
        }
      }
    }
    // Holm never rejects less than Bonferroni: adj ≤ min(1, m·p).
    for (size_t i = 0; i < m; ++i) EXPECT_LE(adj[i], std::min(1.0, static_cast<double>(m) * p[i]));
  }
}

TEST(HolmTest, CorrectSkipsCellsThatCanNeverBeRejected) {
  // Two testable cells (b + c ≥ 2) and three with b + c ≤ 1, whose p is 1 whatever the split.
  std::vector<ProbeAttribution> cells = {Cell(0, 0, 5), Cell(7, 0), Cell(1, 0), Cell(0, 1), Cell(6, 0)};
  std::vector<ProbeAttribution*> family;
  for (ProbeAttribution& a : cells) family.push_back(&a);
  HolmCorrect(family);
  // m = 2: p(7, 0) = 2/128 → ×2 = 0.03125; p(6, 0) = 2/64 → ×1 = 0.03125.
  EXPECT_DOUBLE_EQ(cells[1].mcnemar_p_holm, 0.03125);
  EXPECT_DOUBLE_EQ(cells[4].mcnemar_p_holm, 0.03125);
  EXPECT_TRUE(cells[1].significant);
  EXPECT_TRUE(cells[4].significant);
  for (size_t i : {0, 2, 3}) {
    EXPECT_EQ(cells[i].mcnemar_p_holm, 1.0);
    EXPECT_FALSE(cells[i].significant);
  }
  // A testable cell with a balanced split (p = 1) still counts in m: the exclusion looks at
  // b + c only, never at the outcome.
  std::vector<ProbeAttribution> more = {Cell(7, 0), Cell(3, 3)};
  std::vector<ProbeAttribution*> f2 = {&more[0], &more[1]};
  HolmCorrect(f2);
  EXPECT_DOUBLE_EQ(more[0].mcnemar_p_holm, 2 * 0.015625);
}

TEST(HolmTest, CorrectionTurnsARawlySignificantCellNotSignificant) {
  // p(6, 0) = 0.03125 < 0.05 on its own; among three testable cells it is 0.09375.
  std::vector<ProbeAttribution> cells = {Cell(6, 0), Cell(1, 1), Cell(2, 1)};
  EXPECT_TRUE(cells[0].significant);
  std::vector<ProbeAttribution*> family = {&cells[0], &cells[1], &cells[2]};
  HolmCorrect(family);
  EXPECT_DOUBLE_EQ(cells[0].mcnemar_p, 0.03125);
  EXPECT_DOUBLE_EQ(cells[0].mcnemar_p_holm, 0.09375);
  EXPECT_FALSE(cells[0].significant);
  EXPECT_EQ(DescribeAttribution(cells[0]),
            "6 cache-induced failures, 0 recoveries: not significant (exact McNemar p = 0.0312, "
            "Holm-adjusted p = 0.0938 >= 0.05)");
}

TEST(PooledTest, EqualsMcNemarOnSummedCounts) {
  const std::vector<ProbeAttribution> cells = {Cell(2, 1, 3, 1), Cell(0, 0, 4, 0), Cell(5, 0, 0, 2), Cell(1, 3, 1, 1)};
  const ProbeAttribution pooled = PoolAttributions(cells);
  // (n, both pass, cache-induced, recovered, both fail): the four counts summed cell by cell.
  EXPECT_EQ(std::make_tuple(pooled.n, pooled.both_pass, pooled.cache_induced, pooled.recovered, pooled.both_fail),
            std::make_tuple(int64_t{24}, int64_t{8}, int64_t{8}, int64_t{4}, int64_t{4}));
  EXPECT_DOUBLE_EQ(pooled.baseline_pass_rate, 16.0 / 24.0);
  EXPECT_DOUBLE_EQ(pooled.config_pass_rate, 12.0 / 24.0);
  EXPECT_EQ(pooled.mcnemar_p, McNemarExactP(8, 4));
  EXPECT_EQ(pooled.mcnemar_p_holm, pooled.mcnemar_p);
}

TEST(PooledTest, ManySmallCellsNoneSignificantPoolSignificant) {
  // 8 cells of b = 2, c = 0 (p = 0.5 each, none significant even uncorrected); pooled b = 16,
  // c = 0: p = 2^-15.
  const std::vector<ProbeAttribution> cells(8, Cell(2, 0, 1, 1));
  for (const ProbeAttribution& a : cells) EXPECT_FALSE(a.significant);
  const ProbeAttribution pooled = PoolAttributions(cells);
  EXPECT_DOUBLE_EQ(pooled.mcnemar_p, std::ldexp(1.0, -15));
  EXPECT_TRUE(pooled.significant);
  // The bundled model's q4_0 needles (docs/probes.md): 6 cache-induced, 2 recovered over 56
  // one-instance cells: p = 2·37/256, not significant; kivi2's 10 and 1: p = 2·12/2048.
  std::vector<ProbeAttribution> q4(48, Cell(0, 0, 1));
  q4.insert(q4.end(), 6, Cell(1, 0));
  q4.insert(q4.end(), 2, Cell(0, 1));
  EXPECT_DOUBLE_EQ(PoolAttributions(q4).mcnemar_p, 74.0 / 256.0);
  EXPECT_FALSE(PoolAttributions(q4).significant);
  EXPECT_DOUBLE_EQ(McNemarExactP(10, 1), 24.0 / 2048.0);
}

ProbeRow Row(const std::string& family, const std::string& config, int length, int depth, ProbeAttribution a) {
  return {family, "v", config, length, depth, a};
}

TEST(AttributionTableTest, FamiliesAreCorrectedPerConfiguration) {
  // Configuration A: two needle cells of b = 3 at length 512 (depths 0, 50) and one exact cell.
  // Configuration B: the same needle counts; its family is corrected on its own.
  std::vector<ProbeRow> cells = {Row("needle", "A", 512, 0, Cell(3, 0)), Row("needle", "A", 512, 50, Cell(3, 0)),
                                 Row("exact", "A", 512, -1, Cell(6, 0)), Row("needle", "B", 512, 0, Cell(3, 0)),
                                 Row("needle", "B", 512, 50, Cell(3, 0))};
  HolmCorrectPerConfig(cells);
  EXPECT_DOUBLE_EQ(cells[0].a.mcnemar_p_holm, 0.5);      // the second smallest of A's three: 0.25 × 2
  EXPECT_DOUBLE_EQ(cells[2].a.mcnemar_p_holm, 0.09375);  // 0.03125 × 3
  EXPECT_DOUBLE_EQ(cells[3].a.mcnemar_p_holm, 0.5);      // B: 0.25 × 2
  // Depths pooled per length: A needle 512 has b = 6 (p = 0.03125), A exact 512 b = 6: m = 2.
  const std::vector<ProbeRow> lengths = LengthRows(cells);
  ASSERT_EQ(lengths.size(), 3u);  // sorted: (exact, A), (needle, A), (needle, B)
  EXPECT_EQ(lengths[1].family, "needle");
  EXPECT_EQ(lengths[1].config, "A");
  EXPECT_EQ(lengths[1].a.cache_induced, 6);
  EXPECT_DOUBLE_EQ(lengths[1].a.mcnemar_p_holm, 0.0625);
  EXPECT_DOUBLE_EQ(lengths[2].a.mcnemar_p_holm, 0.03125);  // B's only row
  EXPECT_TRUE(lengths[2].a.significant);
  // Pooled per family, Holm over the families of one configuration: A needle b = 6, exact b = 6.
  const std::vector<PooledRow> pooled = PooledRows(cells, {"A", "B"});
  ASSERT_EQ(pooled.size(), 3u);
  EXPECT_EQ(pooled[0].family, "needle");
  EXPECT_EQ(pooled[0].cells, 2);
  EXPECT_DOUBLE_EQ(pooled[0].a.mcnemar_p, 0.03125);
  EXPECT_DOUBLE_EQ(pooled[0].a.mcnemar_p_holm, 0.0625);
  EXPECT_FALSE(pooled[0].a.significant);
  EXPECT_EQ(pooled[2].config, "B");
  EXPECT_DOUBLE_EQ(pooled[2].a.mcnemar_p_holm, 0.03125);
  EXPECT_TRUE(pooled[2].a.significant);
  const std::string table = PooledTable(pooled);
  EXPECT_NE(table.find("  B needle, 6 instances: 6 cache-induced failures, 0 recoveries: significant after correction"),
            std::string::npos)
      << table;
  EXPECT_NE(LengthTable(cells).find("significant after correction"), std::string::npos);
}

}  // namespace
}  // namespace kvaudit
