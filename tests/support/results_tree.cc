#include "support/results_tree.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_cli.h"

namespace kvaudit::testing {

namespace fs = std::filesystem;

std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string ResultsWithoutRun(const fs::path& dir, const fs::path& root) {
  const std::string text = ReplaceAll(ReadFile((dir / "results.json").string()), root.string(), "DIR");
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  EXPECT_TRUE(j.is_object() && j.contains("run")) << dir;
  if (j.is_object()) j.erase("run");
  return j.dump(2);
}

void ExpectSameResultsTree(const fs::path& merged, const fs::path& whole, int min_files) {
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(whole)) {
    if (e.path().filename() != "results.json") continue;
    const fs::path rel = fs::relative(e.path().parent_path(), whole);
    ASSERT_TRUE(fs::exists(merged / rel / "results.json")) << rel;
    EXPECT_EQ(ResultsWithoutRun(merged / rel, merged), ResultsWithoutRun(whole / rel, whole)) << rel;
    ++n;
  }
  EXPECT_GE(n, min_files);
}

}  // namespace kvaudit::testing
