// Ctrl-C in the middle of a job (run/interrupt.h): the job says how far its journal got and how to
// go on, and dies of the signal (the status a shell expects); the rerun says what it takes from
// the journal and ends with the results of a run never interrupted.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <sstream>
#include <thread>

#include "support/child_process.h"
#include "support/fixtures.h"
#include "support/results_tree.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunCli;

// Windows long enough that the job is surely mid-run when its journal first grows.
const std::string kEval =
    "eval " + testing::BundledJobFlags() + "--bootstrap 200 --ctx 512 --windows 6 --attn-samples 8 --kv k=q4_0,v=q4_0 ";

size_t JournalLines(const fs::path& dir) {
  if (!fs::exists(dir / "progress.jsonl")) return 0;
  const std::string text = ReadFile((dir / "progress.jsonl").string());
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST(InterruptCliTest, CtrlCSaysHowFarItGotAndTheRerunResumesToTheSameResults) {
  const fs::path whole = testing::MakeTempDir("interrupt-whole"), dir = testing::MakeTempDir("interrupt");
  ASSERT_EQ(RunCli(kEval + "--out " + whole.string()).exit_code, 0);

  std::vector<std::string> argv = {testing::KvauditBinary().string()};
  std::istringstream words(kEval + "--out " + dir.string());
  for (std::string w; words >> w;) argv.push_back(w);
  auto child = testing::ChildProcess::Start(argv);
  ASSERT_NE(child, nullptr);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline && JournalLines(dir) < 2) {  // its header and one window
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  child->Signal(SIGINT);
  ASSERT_EQ(child->WaitExit(30000), std::optional<int>(-1)) << "it finished before the signal, or ignored it";
  const size_t recorded = JournalLines(dir) - 1;
  ASSERT_GE(recorded, 1u);
  ASSERT_LT(recorded, 6u);
  const std::string said = child->Stderr();
  EXPECT_NE(said.find("\nkvaudit: interrupted after " + std::to_string(recorded) + " of 6 windows of eval (kept in " +
                      (dir / "progress.jsonl").string() + "); rerun the same command to resume\n"),
            std::string::npos)
      << said;
  EXPECT_FALSE(fs::exists(dir / "results.json"));

  const auto again = RunCli(kEval + "--out " + dir.string());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err.rfind("kvaudit: resuming eval: " + std::to_string(recorded) + " of 6 windows already done (" +
                                (dir / "progress.jsonl").string() + ")\n",
                            0),
            0u)
      << again.err;
  EXPECT_EQ(testing::ResultsWithoutRun(dir, dir), testing::ResultsWithoutRun(whole, whole));
  fs::remove_all(whole), fs::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit
