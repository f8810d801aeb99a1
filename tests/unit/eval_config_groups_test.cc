// eval/config_groups.h's grouping: consecutive configurations, the fewest groups a budget allows,
// a configuration too large for the budget alone in its group.
#include "eval/config_groups.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace kvaudit {
namespace {

std::vector<std::pair<size_t, size_t>> Pairs(const std::vector<ConfigGroup>& groups) {
  std::vector<std::pair<size_t, size_t>> out;
  for (const ConfigGroup& g : groups) out.emplace_back(g.first, g.count);
  return out;
}

using P = std::vector<std::pair<size_t, size_t>>;

TEST(ConfigGroups, AllInOneGroupWhenTheyFit) {
  const std::vector<uint64_t> bytes = {3, 3, 3, 3};
  EXPECT_EQ(Pairs(GroupConfigs(bytes, 12)), (P{{0, 4}}));
  EXPECT_EQ(Pairs(GroupConfigs(bytes, 100)), (P{{0, 4}}));
}

TEST(ConfigGroups, ConsecutiveGroupsUpToTheBudget) {
  EXPECT_EQ(Pairs(GroupConfigs(std::vector<uint64_t>{3, 3, 3, 3}, 11)), (P{{0, 3}, {3, 1}}));
  EXPECT_EQ(Pairs(GroupConfigs(std::vector<uint64_t>{3, 3, 3, 3}, 6)), (P{{0, 2}, {2, 2}}));
  EXPECT_EQ(Pairs(GroupConfigs(std::vector<uint64_t>{5, 1, 1, 5, 2}, 7)), (P{{0, 3}, {3, 2}}));
}

TEST(ConfigGroups, ATooLargeConfigurationIsAGroupOfItsOwn) {
  EXPECT_EQ(Pairs(GroupConfigs(std::vector<uint64_t>{2, 9, 2}, 4)), (P{{0, 1}, {1, 1}, {2, 1}}));
  EXPECT_EQ(Pairs(GroupConfigs(std::vector<uint64_t>{3, 3, 3}, 0)), (P{{0, 1}, {1, 1}, {2, 1}}));
}

TEST(ConfigGroups, SumsThatWouldWrapStartANewGroup) {
  const uint64_t big = std::numeric_limits<uint64_t>::max() - 1;
  EXPECT_EQ(Pairs(GroupConfigs(std::vector<uint64_t>{big, 5}, std::numeric_limits<uint64_t>::max())),
            (P{{0, 1}, {1, 1}}));
}

TEST(ConfigGroups, NoConfigurationsNoGroups) { EXPECT_TRUE(GroupConfigs(std::vector<uint64_t>{}, 10).empty()); }

}  // namespace
}  // namespace kvaudit
