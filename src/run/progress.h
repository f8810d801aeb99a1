// A one-line progress bar with ETA on stderr, only when stderr is a terminal (quiet in pipes and
// CI, where a stream of \r updates would only bloat logs).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace kvaudit {

class ProgressBar {
 public:
  // total: work units (positions); enabled: draw at all (callers pass StderrIsTerminal()).
  ProgressBar(int64_t total, bool enabled, std::string label);
  void Advance(int64_t units);  // redraws at most ~10 times a second
  void Finish();                // clears the line

 private:
  void Draw();
  int64_t total_, done_ = 0;
  bool enabled_;
  std::string label_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

bool StderrIsTerminal();

}  // namespace kvaudit
