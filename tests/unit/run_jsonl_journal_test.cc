// The journal's refusal names what changed: nested fingerprint entries by their dotted path. Read
// (merge --partial over running shards) never writes: a torn last line is skipped, not cut off.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run/jsonl_journal.h"
#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

using json = nlohmann::json;

TEST(JsonlJournalTest, ChangedKeysNameNestedEntriesByPath) {
  const json old = {{"seed", 1},
                    {"configs", {"k=q4_0,v=q4_0"}},
                    {"custom", {{"fib", {{"expected", "return"}, {"max_tokens", 8}}}, {"imp", {{"regex", "^a"}}}}}};
  json now = old;
  now["custom"]["fib"]["expected"] = "if";
  EXPECT_EQ(JsonlJournal::ChangedKeys(old, now), "custom.fib.expected");
  now["custom"].erase("imp");
  now["calibration"] = "abc";
  EXPECT_EQ(JsonlJournal::ChangedKeys(old, now), "calibration, custom.fib.expected, custom.imp");
  now["configs"] = {"k=q8_0,v=q8_0"};  // arrays are compared whole
  EXPECT_EQ(JsonlJournal::ChangedKeys(old, now), "calibration, configs, custom.fib.expected, custom.imp");
  EXPECT_EQ(JsonlJournal::ChangedKeys(json::array(), now), "fingerprint");
}

TEST(JsonlJournalTest, ChangedKeysListAtMostFive) {
  json old, now;
  for (int i = 0; i < 8; ++i) old["k" + std::to_string(i)] = i, now["k" + std::to_string(i)] = i + 1;
  EXPECT_EQ(JsonlJournal::ChangedKeys(old, now), "k0, k1, k2, k3, k4 and 3 more");
}

TEST(JsonlJournalTest, RefusalNamesTheChangedEntryAndLeavesTheFileAlone) {
  const std::filesystem::path dir = testing::MakeTempDir("journal");
  const std::string path = (dir / "progress.jsonl").string();
  std::vector<json> lines;
  const json fp = {{"custom", {{"fib", {{"expected", "return"}}}}}};
  {
    auto j = JsonlJournal::Open(path, "kvaudit_test_progress", fp, "probe", &lines);
    ASSERT_TRUE(j.ok()) << j.error().message;
    ASSERT_TRUE((*j)->Append({{"id", "custom/fib"}}).ok());
  }
  json changed = fp;
  changed["custom"]["fib"]["expected"] = "if";
  auto refused = JsonlJournal::Open(path, "kvaudit_test_progress", changed, "probe", &lines);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("(custom.fib.expected changed)"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(refused.error().exit_code(), 2);
  auto reopened = JsonlJournal::Open(path, "kvaudit_test_progress", fp, "probe", &lines);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(lines.size(), 1u);
  std::filesystem::remove_all(dir);
}

TEST(JsonlJournalTest, ReadSkipsATornLastLineAndLeavesTheFileAlone) {
  const std::filesystem::path dir = testing::MakeTempDir("journal-read");
  const std::string path = (dir / "progress.jsonl").string();
  const json fp = {{"seed", 1}};
  std::vector<json> lines;
  auto j = JsonlJournal::Open(path, "kvaudit_test_progress", fp, "probe", &lines);
  ASSERT_TRUE(j.ok()) << j.error().message;
  ASSERT_TRUE((*j)->Append({{"id", "a"}}).ok());
  {
    std::ofstream torn(path, std::ios::app);
    torn << "{\"id\": \"b";
  }  // a write under way
  const std::string before = testing::ReadFile(path);
  ASSERT_TRUE(JsonlJournal::Read(path, "kvaudit_test_progress", fp, "probe", &lines).ok());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["id"], "a");
  EXPECT_EQ(testing::ReadFile(path), before);
  // The writer finishes its line; a second read sees it.
  {
    std::ofstream rest(path, std::ios::app);
    rest << "\"}\n";
  }
  ASSERT_TRUE(JsonlJournal::Read(path, "kvaudit_test_progress", fp, "probe", &lines).ok());
  EXPECT_EQ(lines.size(), 2u);
  const Status other = JsonlJournal::Read(path, "kvaudit_test_progress", {{"seed", 2}}, "probe", &lines);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("(seed changed)"), std::string::npos) << other.error().message;
  EXPECT_FALSE(JsonlJournal::Read((dir / "none.jsonl").string(), "kvaudit_test_progress", fp, "probe", &lines).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit
