// A job's progress on stderr. On a terminal: one line redrawn in place (a bar, the count, the ETA),
// at most ~10 times a second. Anywhere else (a CI log, a file): a plain line at most every 30 s,
// so a long run is never silent in a log and never floods it.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace kvaudit {

struct ProgressOutput {
  std::FILE* stream = stderr;
  bool terminal = false;                        // redraw one line in place
  std::chrono::milliseconds log_every{30'000};  // not a terminal: a line at most this often
};
// stderr, as a terminal when it is one.
ProgressOutput StderrProgress();

class ProgressBar {
 public:
  // total: work units (positions, probes) this process computes; label: the job ("eval").
  ProgressBar(int64_t total, std::string label, ProgressOutput out = StderrProgress());
  void Advance(int64_t units);
  void Finish();  // a terminal's line is cleared

 private:
  void Draw();
  void Log();
  std::string Eta(double frac, double elapsed) const;
  int64_t total_, done_ = 0;
  std::string label_;
  ProgressOutput out_;
  std::chrono::steady_clock::time_point start_, last_;
};

bool StderrIsTerminal();

}  // namespace kvaudit
