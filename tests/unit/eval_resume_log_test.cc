// The progress log: exact round trip, reopening, torn last lines, and refusal to mix runs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "eval/resume_log.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;

WindowRecord Sample(int window) {
  WindowRecord r;
  r.window = window;
  r.first_pos = 3;
  r.tokens = {5, 9, 2};
  r.nll_base = {0.1 + window, 1e-300, 2.5};
  WindowRecord::Config c;
  c.kld = {0.0, 1.0 / 3.0, std::numeric_limits<double>::denorm_min()};
  c.nll = {-0.0, 12345.678901234567, 0.1};
  c.dp = {-1e-17, 0.0, 0.3};
  c.top1 = {1, 0, 1};
  c.top5_drop = {0, 0, 1};
  r.configs = {c, c};
  r.configs[1].kld[0] = 7.0;
  return r;
}

void ExpectSame(const WindowRecord& a, const WindowRecord& b) {
  EXPECT_EQ(a.window, b.window);
  EXPECT_EQ(a.first_pos, b.first_pos);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.nll_base, b.nll_base);
  ASSERT_EQ(a.configs.size(), b.configs.size());
  for (size_t c = 0; c < a.configs.size(); ++c) {
    EXPECT_EQ(a.configs[c].kld, b.configs[c].kld);  // bitwise: doubles round-trip exactly
    EXPECT_EQ(a.configs[c].nll, b.configs[c].nll);
    EXPECT_EQ(a.configs[c].dp, b.configs[c].dp);
    EXPECT_EQ(a.configs[c].top1, b.configs[c].top1);
    EXPECT_EQ(a.configs[c].top5_drop, b.configs[c].top5_drop);
  }
  EXPECT_TRUE(std::signbit(b.configs[0].nll[0]));  // −0.0 survives
}

TEST(ResumeLogTest, WindowRecordsRoundTripExactly) {
  const WindowRecord r = Sample(4);
  const auto parsed = nlohmann::json::parse(WindowToJson(r).dump(), nullptr, false);
  auto back = WindowFromJson(parsed, 2);
  ASSERT_TRUE(back.ok());
  ExpectSame(r, *back);
  EXPECT_FALSE(WindowFromJson(parsed, 3).ok());  // wrong number of configurations
  nlohmann::json broken = parsed;
  broken["configs"][0]["top1"] = "10";
  EXPECT_FALSE(WindowFromJson(broken, 2).ok());
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What an eval run does with its directory (EvalSession::Run): the job skeleton opens the
// journal, eval reads its windows back. dir/progress.jsonl.
Expected<JobRun> OpenLog(const fs::path& dir, const nlohmann::json& fp, size_t n_windows,
                         std::vector<WindowRecord>* done) {
  JobOptions o;
  o.out = dir.string();
  std::vector<nlohmann::json> lines;
  KV_ASSIGN_OR_RETURN(JobRun run, JobRun::Open(kEvalJob, o, fp, std::vector<int64_t>(n_windows, 1), &lines));
  KV_RETURN_IF_ERROR(WindowsFromJournal(lines, run.journal_path(), 2, n_windows, 0, done));
  return run;
}

TEST(ResumeLogTest, ReopenSkipsTornLineAndRefusesOtherRuns) {
  const fs::path dir = testing::MakeTempDir("resume");
  const fs::path path = dir / "progress.jsonl";
  const nlohmann::json fp = {{"model", "abc"}, {"ctx", 256}, {"configs", {"k=q4_0,v=q4_0"}}};
  std::vector<WindowRecord> done;
  {
    auto log = OpenLog(dir, fp, 10, &done);
    ASSERT_TRUE(log.ok());
    EXPECT_TRUE(done.empty());
    ASSERT_TRUE(log->Record(WindowToJson(Sample(2))).ok());
    ASSERT_TRUE(log->Record(WindowToJson(Sample(0))).ok());
  }
  // A kill in the middle of the third line leaves half of it, without its newline.
  const std::string third = WindowToJson(Sample(5)).dump();
  { std::ofstream(path, std::ios::app | std::ios::binary) << third.substr(0, third.size() / 2); }
  {
    auto log = OpenLog(dir, fp, 10, &done);
    ASSERT_TRUE(log.ok());
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[0].window, 0);  // ascending, whatever the file order
    ExpectSame(Sample(2), done[1]);
    ASSERT_TRUE(log->Record(WindowToJson(Sample(5))).ok());  // appended after the cut, not glued to the torn half
  }
  {
    auto log = OpenLog(dir, fp, 10, &done);
    ASSERT_TRUE(log.ok());
    ASSERT_EQ(done.size(), 3u);
    EXPECT_EQ(done[2].window, 5);
    // A smaller window count uses only the windows it has.
    auto fewer = OpenLog(dir, fp, 3, &done);
    ASSERT_TRUE(fewer.ok());
    EXPECT_EQ(done.size(), 2u);
  }
  const std::string before = Slurp(path);
  nlohmann::json other = fp;
  other["ctx"] = 512;
  auto mismatch = OpenLog(dir, other, 10, &done);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.error().exit_code(), 2);
  EXPECT_NE(mismatch.error().message.find("ctx"), std::string::npos) << mismatch.error().message;
  EXPECT_NE(mismatch.error().message.find("--restart"), std::string::npos);
  EXPECT_EQ(Slurp(path), before);  // refusing never touches the file
  // Damage before the last line is an error, not silently dropped data.
  { std::ofstream(path, std::ios::app | std::ios::binary) << "garbage\n" << WindowToJson(Sample(7)).dump() << "\n"; }
  auto damaged = OpenLog(dir, fp, 10, &done);
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.error().message.find("damaged"), std::string::npos);
  // Not a progress file at all.
  const fs::path foreign = testing::MakeTempDir("resume-foreign");
  { std::ofstream(foreign / "progress.jsonl") << "{\"text\":\"hello\"}\n"; }
  EXPECT_FALSE(OpenLog(foreign, fp, 10, &done).ok());
  fs::remove_all(dir);
  fs::remove_all(foreign);
}

TEST(ResumeLogTest, HashesSeeBoundariesAndContent) {
  EXPECT_NE(HashWindows({{1, 2}, {3}}), HashWindows({{1}, {2, 3}}));
  EXPECT_NE(HashWindows({{1, 2, 3}}), HashWindows({{1, 2, 4}}));
  EXPECT_EQ(HashWindows({{1, 2, 3}}), HashWindows({{1, 2, 3}}));
  EXPECT_EQ(HexHash(0x1f).size(), 16u);
}

}  // namespace
}  // namespace kvaudit
