#include "run/run_clock.h"

#include <sys/resource.h>

#include <cstdio>

namespace kvaudit {

RunTotals RunClock::Stop() const {
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(), PeakRssMb()};
}

double PeakRssMb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux: KiB
}

std::string RunFooter(const RunTotals& totals, int resumed, int total, const std::string& unit,
                      const std::string& results_path) {
  char line[160];
  std::snprintf(line, sizeof(line), "wall %.1f s, peak RSS %.0f MB, %d of %d %s resumed; results: ", totals.wall_s,
                totals.peak_rss_mb, resumed, total, unit.c_str());
  return line + results_path + "\n";
}

std::string RunFooter(const RunTotals& totals, const std::string& results_path) {
  char line[96];
  std::snprintf(line, sizeof(line), "wall %.1f s, peak RSS %.0f MB; results: ", totals.wall_s, totals.peak_rss_mb);
  return line + results_path + "\n";
}

}  // namespace kvaudit
