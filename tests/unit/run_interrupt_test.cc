// What an interrupted job says (run/interrupt.h), checked without a signal: the message the
// handler writes, from the context a job published and the records it counted since. The signal
// itself is tested end to end in tests/cli/cli_interrupt_test.cc.
#include "run/interrupt.h"

#include <gtest/gtest.h>

#include <string>

namespace kvaudit {
namespace {

std::string Message() {
  char buf[1024];
  const size_t n = FormatInterruptMessage(buf, sizeof(buf));
  EXPECT_EQ(buf[n], '\0');
  return std::string(buf, n);
}

TEST(InterruptMessage, SaysHowFarTheJournalGotAndHowToGoOn) {
  SetInterruptContext("eval", "windows", "/runs/a/progress.jsonl", 8, 2);
  CountInterruptRecord();
  EXPECT_EQ(Message(),
            "\nkvaudit: interrupted after 3 of 8 windows of eval (kept in /runs/a/progress.jsonl); rerun the same "
            "command to resume\n");
  SetInterruptContext("probe", "probes", "/runs/b/progress.jsonl", 40, 0);  // the next stage's job
  EXPECT_EQ(Message(),
            "\nkvaudit: interrupted after 0 of 40 probes of probe (kept in /runs/b/progress.jsonl); rerun the same "
            "command to resume\n");
}

TEST(InterruptMessage, ALongPathIsCutNotOverrun) {
  SetInterruptContext("eval", "windows", std::string(2000, 'd'), 8, 2);
  char small[64];
  const size_t n = FormatInterruptMessage(small, sizeof(small));
  EXPECT_EQ(n, sizeof(small) - 1);
  EXPECT_EQ(small[n], '\0');
  EXPECT_LE(Message().size(), 1023u);
}

}  // namespace
}  // namespace kvaudit
