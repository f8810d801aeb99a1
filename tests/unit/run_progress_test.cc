// Progress on stderr (run/progress.h): in place on a terminal, a plain line at most every
// log_every elsewhere, so a CI log of a long run is neither silent nor flooded.
#include "run/progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace kvaudit {
namespace {

// What the bar wrote to a temporary stream.
std::string Written(std::FILE* f) {
  std::fflush(f);
  std::string out(static_cast<size_t>(std::ftell(f)), '\0');
  std::rewind(f);
  EXPECT_EQ(std::fread(out.data(), 1, out.size(), f), out.size());
  return out;
}

TEST(ProgressBar, ALogGetsPlainLinesAtMostEveryInterval) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressBar every(4, "eval", {f, false, std::chrono::milliseconds(0)});
    every.Advance(1);
    every.Advance(1);
    every.Advance(2);  // the end: no line (the job's own summary follows)
    every.Finish();
  }
  const std::string text = Written(f);
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  ASSERT_EQ(text.rfind("kvaudit: eval 1/4 (25.0%), 0:00 elapsed, ETA ", 0), 0u) << text;
  EXPECT_NE(text.find("\nkvaudit: eval 2/4 (50.0%), 0:00 elapsed, ETA "), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  std::fclose(f);

  f = std::tmpfile();
  ProgressBar rarely(4, "probe", {f, false, std::chrono::hours(1)});
  for (int i = 0; i < 3; ++i) rarely.Advance(1);
  EXPECT_EQ(Written(f), "");  // not an hour yet
  std::fclose(f);
}

TEST(ProgressBar, ATerminalGetsOneLineRedrawnAndClearedAtTheEnd) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressBar bar(2, "eval", {f, true, std::chrono::milliseconds(0)});
  bar.Advance(2);
  bar.Finish();
  const std::string text = Written(f);
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
  EXPECT_NE(text.find("\reval [..............................]   0.0%  0/2  ETA --:-- "), std::string::npos) << text;
  EXPECT_NE(text.find("\reval [##############################] 100.0%  2/2  ETA 0:00 "), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\r');
  std::fclose(f);
}

}  // namespace
}  // namespace kvaudit
