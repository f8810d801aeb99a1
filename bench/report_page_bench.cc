// The HTML report in headless Chromium, for BENCHMARKS.md "kvaudit report" and docs/report.md:
//   report_page_bench time PAGE [runs]   load time of the page from file:// (loadEventEnd of the
//                                        navigation, ms), one fresh browser per run, median of runs
//   report_page_bench shots PAGE OUTDIR  one PNG per section of the report (docs/report-*.png)
// Uses the test harness (tests/support/headless_chromium.h): Debian's chromium over CDP's pipe.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "support/headless_chromium.h"

using kvaudit::testing::HeadlessChromium;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<HeadlessChromium> Open(const fs::path& page) {
  std::string error;
  auto browser = HeadlessChromium::Launch(&error);
  if (!browser) {
    std::fprintf(stderr, "report_page_bench: %s\n", error.c_str());
    std::exit(2);
  }
  const kvaudit::Status loaded = browser->Navigate("file://" + fs::absolute(page).string());
  if (!loaded.ok()) {
    std::fprintf(stderr, "report_page_bench: %s\n", loaded.error().message.c_str());
    std::exit(2);
  }
  return browser;
}

int Time(const fs::path& page, int runs) {
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    auto browser = Open(page);
    const kvaudit::Expected<double> t = browser->NavigationMs();
    if (!t.ok()) return std::fprintf(stderr, "report_page_bench: %s\n", t.error().message.c_str()), 2;
    ms.push_back(*t);
    if (!browser->ConsoleErrors().empty())
      std::fprintf(stderr, "console error: %s\n", browser->ConsoleErrors()[0].c_str());
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  std::printf("%s: %ju bytes; load %.1f ms median of %d (min %.1f, max %.1f); runs:", page.c_str(),
              static_cast<uintmax_t>(fs::file_size(page)), sorted[sorted.size() / 2], runs, sorted.front(),
              sorted.back());
  for (double m : ms) std::printf(" %.1f", m);
  std::printf("\n");
  return 0;
}

int Shots(const fs::path& page, const fs::path& out) {
  struct Shot {
    const char* name;
    const char* selector;
  };
  const Shot shots[] = {
      {"report-verdict.png", "#verdict"},
      {"report-memory.png", "#memory"},
      {"report-curves.png", "#curves figure"},
      {"report-attention.png", "#attention .heatmaps"},
      {"report-sensitivity.png", "#sensitivity figure:has(svg[id^='pareto'])"},
      {"report-probes.png", "#probes .grids"},
      {"report-worst-cases.png", "#worst-cases .case"},
      {"report-run-info.png", "#run-info table.meta"},
  };
  auto browser = Open(page);
  fs::create_directories(out);
  for (const Shot& s : shots) {
    const kvaudit::Status done = browser->ScreenshotElement(s.selector, out / s.name);
    if (!done.ok())
      return std::fprintf(stderr, "report_page_bench: %s: %s\n", s.selector, done.error().message.c_str()), 2;
    std::printf("%s: %ju bytes\n", (out / s.name).c_str(), static_cast<uintmax_t>(fs::file_size(out / s.name)));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "time" && argc >= 3) return Time(argv[2], argc > 3 ? std::atoi(argv[3]) : 5);
  if (mode == "shots" && argc == 4) return Shots(argv[2], argv[3]);
  std::fprintf(stderr, "usage: report_page_bench time PAGE [runs] | shots PAGE OUTDIR\n");
  return 2;
}
