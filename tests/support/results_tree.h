// Comparing a sharded-then-merged run with the unsharded one (docs/scale-out.md "What
// differs from an unsharded run"): results.json files but their run blocks, with the directory's
// own path replaced (results texts name their directory).
#pragma once

#include <filesystem>
#include <string>

namespace kvaudit::testing {

// DIR/results.json without its run block, every occurrence of root's path replaced by "DIR",
// dumped with two-space indentation (a gtest failure when it is not a JSON object with a run).
std::string ResultsWithoutRun(const std::filesystem::path& dir, const std::filesystem::path& root);

// Every results.json below `whole` has its equal (ResultsWithoutRun, each against its own root) at
// the same place below `merged`; at least `min_files` of them.
void ExpectSameResultsTree(const std::filesystem::path& merged, const std::filesystem::path& whole, int min_files);

// text with every occurrence of `from` replaced by `to`.
std::string ReplaceAll(std::string text, const std::string& from, const std::string& to);

}  // namespace kvaudit::testing
