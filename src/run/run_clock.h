// What every long job reports when it ends: wall time since it started, peak resident memory, how
// much of it was resumed from the journal, and where the results are.
#pragma once

#include <chrono>
#include <string>

namespace kvaudit {

struct RunTotals {
  double wall_s = 0;
  double peak_rss_mb = 0;  // getrusage ru_maxrss
};

class RunClock {
 public:
  RunClock() : start_(std::chrono::steady_clock::now()) {}
  RunTotals Stop() const;  // wall time since construction, peak RSS so far

 private:
  std::chrono::steady_clock::time_point start_;
};

// Peak resident set size of this process in MB.
double PeakRssMb();

// "wall 12.3 s, peak RSS 85 MB, 0 of 16 instances resumed; results: DIR/results.json"
// unit: what the job's work is counted in ("windows", "instances").
std::string RunFooter(const RunTotals& totals, int resumed, int total, const std::string& unit,
                      const std::string& results_path);
// "wall 12.3 s, peak RSS 85 MB; results: DIR/results.json": a job of stages that each resume
// on their own (recommend, audit), so no one count of resumed units applies.
std::string RunFooter(const RunTotals& totals, const std::string& results_path);

}  // namespace kvaudit
