// What an interrupted job says (run/interrupt.h), checked without a signal: the message the
// handler writes from the context a job published and its journal as it is, a torn last line not
// counted (a rerun does not take it). The signal itself is tested end to end in
// tests/cli/cli_interrupt_test.cc.
#include "run/interrupt.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/fixtures.h"

namespace kvaudit {
namespace {

std::string Message() {
  char buf[1024];
  const size_t n = FormatInterruptMessage(buf, sizeof(buf));
  EXPECT_EQ(buf[n], '\0');
  return std::string(buf, n);
}

TEST(InterruptMessage, CountsTheJournalsCompleteRecordsAndSaysHowToGoOn) {
  const std::filesystem::path journal = testing::MakeTempDir("interrupt-msg") / "progress.jsonl";
  std::ofstream(journal) << "{\"kvaudit_eval_progress\": {}}\n{\"window\": 0}\n{\"window\": 1}\n{\"window\": 2}\n"
                         << "{\"window\": 3, \"tok";  // torn: still being written
  SetInterruptContext("eval", "windows", journal.string(), 8);
  EXPECT_EQ(Message(), "\nkvaudit: interrupted after 3 of 8 windows of eval (kept in " + journal.string() +
                           "); rerun the same command to resume\n");
  // The next stage's job, its journal not there yet.
  SetInterruptContext("probe", "probes", (journal.parent_path() / "probe" / "progress.jsonl").string(), 40);
  EXPECT_NE(Message().find("interrupted after 0 of 40 probes of probe"), std::string::npos) << Message();
  std::filesystem::remove_all(journal.parent_path());
}

TEST(InterruptMessage, ALongPathIsCutNotOverrun) {
  SetInterruptContext("eval", "windows", std::string(2000, 'd'), 8);
  char small[64];
  const size_t n = FormatInterruptMessage(small, sizeof(small));
  EXPECT_EQ(n, sizeof(small) - 1);
  EXPECT_EQ(small[n], '\0');
  EXPECT_LE(Message().size(), 1023u);
}

}  // namespace
}  // namespace kvaudit
