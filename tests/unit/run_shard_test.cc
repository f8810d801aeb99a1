// The --shard partition (run/shard.h; docs/scale-out.md): every unit in exactly one shard for
// N = 1..17 over equal, skewed and short cost vectors, the same answer every call, each shard's
// cost within total/N + the largest unit's, and the flag's grammar.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "run/shard.h"

namespace kvaudit {
namespace {

std::vector<std::vector<int64_t>> CostVectors() {
  std::vector<std::vector<int64_t>> v;
  v.push_back(std::vector<int64_t>(40, 256));               // equal: eval windows of one length
  v.push_back({4096, 4096, 2048, 1024, 512, 512, 256, 1});  // skewed: probe lengths
  v.push_back({7, 3});                                      // fewer units than most N
  v.push_back({});                                          // nothing to split
  std::mt19937_64 rng(5);
  std::vector<int64_t> random(101);
  for (int64_t& c : random) c = static_cast<int64_t>(rng() % 5000);
  v.push_back(random);
  std::vector<int64_t> with_zero = {0, 0, 10, 0, 3};
  v.push_back(with_zero);
  return v;
}

TEST(ShardTest, EveryUnitInExactlyOneShardAndBalanced) {
  for (const auto& costs : CostVectors()) {
    const int64_t total = std::accumulate(costs.begin(), costs.end(), int64_t{0});
    const int64_t max_cost = costs.empty() ? 0 : *std::max_element(costs.begin(), costs.end());
    for (int n = 1; n <= 17; ++n) {
      std::vector<int> owner(costs.size(), -1);
      for (int i = 0; i < n; ++i) {
        const std::vector<size_t> units = ShardUnits(costs, i, n);
        EXPECT_TRUE(std::is_sorted(units.begin(), units.end()));
        int64_t load = 0;
        for (size_t u : units) {
          ASSERT_LT(u, costs.size());
          EXPECT_EQ(owner[u], -1) << "unit " << u << " in shards " << owner[u] << " and " << i << " of " << n;
          owner[u] = i;
          load += costs[u];
        }
        // Greedy list scheduling: a unit goes to a shard holding at most the average, so no shard
        // ends above total/N + its largest unit (checked in integers: load*N <= total + N*max).
        EXPECT_LE(load * n, total + n * max_cost) << "shard " << i << " of " << n << " holds " << load;
        EXPECT_EQ(units, ShardUnits(costs, i, n));  // deterministic
      }
      for (size_t u = 0; u < costs.size(); ++u) EXPECT_GE(owner[u], 0) << "unit " << u << " in no shard of " << n;
    }
  }
}

TEST(ShardTest, OneShardHoldsEverythingAndTiesGoByIndex) {
  const std::vector<int64_t> equal(6, 256);
  EXPECT_EQ(ShardUnits(equal, 0, 1), (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  // Equal costs: round robin, unit 0 to shard 0.
  EXPECT_EQ(ShardUnits(equal, 0, 2), (std::vector<size_t>{0, 2, 4}));
  EXPECT_EQ(ShardUnits(equal, 1, 3), (std::vector<size_t>{1, 4}));
  // The largest first: 10 -> shard 0, 6 -> 1, 5 -> 1 (6 < 10), 4 -> 0 (10 < 11).
  EXPECT_EQ(AssignShards({5, 10, 6, 4}, 2), (std::vector<int>{1, 0, 1, 0}));
  // More shards than units: the extra shards are empty.
  EXPECT_TRUE(ShardUnits({7, 3}, 5, 6).empty());
}

TEST(ShardTest, ParsesTheFlag) {
  auto s = ParseShard("2/5");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 5);
  EXPECT_EQ(s->Text(), "2/5");
  for (const char* bad : {"5/5", "-1/3", "1", "a/b", "1/0", "0/", "/2", "1/2/3", " 1/2", "1/2x"}) {
    auto e = ParseShard(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_NE(e.error().message.find("--shard"), std::string::npos);
    EXPECT_NE(e.error().message.find("hint:"), std::string::npos);
  }
}

}  // namespace
}  // namespace kvaudit
