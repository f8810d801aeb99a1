#include <gtest/gtest.h>

#include <fstream>
#include <numeric>

#include "run/text_data.h"
#include "run/windows.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

TEST(WindowsTest, FullWindowsOnlyAndLaterWindowsStartWithBos) {
  std::vector<int32_t> ids(10);
  std::iota(ids.begin(), ids.end(), 100);
  ids[0] = 0;  // BOS
  const auto w = MakeWindows(ids, 4, 0);
  ASSERT_EQ(w.size(), 2u);  // 10 tokens = 2 full windows of 4; the 2 left over are dropped
  EXPECT_EQ(w[0], (std::vector<int32_t>{0, 101, 102, 103}));
  EXPECT_EQ(w[1], (std::vector<int32_t>{0, 105, 106, 107}));  // 104 replaced by BOS
}

TEST(WindowsTest, ShortStreamIsOneWindowAndNoBosMeansNoReplacement) {
  const std::vector<int32_t> ids = {5, 6, 7};
  EXPECT_EQ(MakeWindows(ids, 8, 0), (std::vector<std::vector<int32_t>>{ids}));
  const std::vector<int32_t> eight = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(MakeWindows(eight, 4, -1)[1][0], 5);
  EXPECT_TRUE(MakeWindows({}, 4, 0).empty());
}

TEST(TextDataTest, JsonlFolderAndErrors) {
  const auto dir = testing::MakeTempDir("textdata");
  { std::ofstream(dir / "d.jsonl") << "{\"text\":\"a\"}\n\n{\"text\":\"b\",\"path\":\"x\"}\n"; }
  auto docs = LoadDocuments((dir / "d.jsonl").string());
  ASSERT_TRUE(docs.ok());
  EXPECT_EQ(*docs, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(JoinDocuments(*docs), "a\n\nb");

  std::filesystem::create_directories(dir / "folder");
  std::ofstream(dir / "folder" / "2.txt") << "second";
  std::ofstream(dir / "folder" / "1.txt") << "first";
  auto folder = LoadDocuments((dir / "folder").string());
  ASSERT_TRUE(folder.ok());
  EXPECT_EQ(*folder, (std::vector<std::string>{"first", "second"}));

  std::ofstream(dir / "bad.jsonl") << "{\"text\":\"a\"}\n{\"txt\":1}\n";
  auto bad = LoadDocuments((dir / "bad.jsonl").string());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().exit_code(), 2);
  EXPECT_NE(bad.error().message.find("bad.jsonl:2"), std::string::npos) << bad.error().message;

  std::ofstream(dir / "empty.txt") << "";
  EXPECT_FALSE(LoadDocuments((dir / "empty.txt").string()).ok());
  EXPECT_FALSE(LoadDocuments((dir / "missing.txt").string()).ok());
}

// --first-window F --windows K: windows [F, F + K) of the data; K = 0 runs to the end; a start at
// or past the last window is one line of bad input.
TEST(WindowsTest, SelectWindowsTakesARangeFromTheFirstWindow) {
  const std::vector<std::vector<int32_t>> all = {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}};
  auto mid = SelectWindows(all, 1, 2);
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(*mid, (std::vector<std::vector<int32_t>>{{0, 2}, {0, 3}}));
  auto tail = SelectWindows(all, 3, 0);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(*tail, (std::vector<std::vector<int32_t>>{{0, 4}, {0, 5}}));
  auto clipped = SelectWindows(all, 4, 10);
  ASSERT_TRUE(clipped.ok());
  EXPECT_EQ(clipped->size(), 1u);
  auto past = SelectWindows(all, 5, 1);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.error().exit_code(), 2);
  EXPECT_NE(past.error().message.find("--first-window 5 is past the data's 5 windows"), std::string::npos)
      << past.error().message;
  EXPECT_EQ(past.error().message.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace kvaudit
